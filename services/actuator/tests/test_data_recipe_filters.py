"""A data recipe read from properties, and what Data-Juicer's own operators keep of a few
documents, checked against the statistics computed here by hand."""

from __future__ import annotations

import string

import numpy as np
import pytest

from discospace.actuator.cpu_train.plan import PlanError
from discospace.actuator.data_recipe.recipe import RECIPE_DEFAULTS, Recipe, recipe_of

juicer = pytest.importorskip(
    "discospace.actuator.data_recipe.juicer", reason="needs the actuator's data extra"
)
pytest.importorskip("data_juicer", reason="py-data-juicer: make test-setup installs it")

DOCS = [
    "The queue holds the items in the order they came, and hands them out in that order.",
    "x = 1",
    "'\\x00'     #  0x00 -> NULL\n'\\x01'     #  0x01 -> START OF HEADING",
    "abababababababababababababababababababababababab",
    "1234567890 1234567890 1234567890 1234567890",
    "The queue holds the items in the order they came, and hands them out in that order.",
    "A short line of words.",
]


def _alnum_ratio(text: str) -> float:
    return sum(c.isalnum() for c in text) / len(text)


def _special_ratio(text: str) -> float:
    special = set(string.punctuation + string.digits + string.whitespace)
    return sum(c in special for c in text) / len(text)


def _char_rep_ratio(text: str, n: int = 10) -> float:
    grams: dict[str, int] = {}
    for i in range(len(text) - n + 1):
        grams[text[i : i + n]] = grams.get(text[i : i + n], 0) + 1
    if not grams:
        return 0.0
    counts = sorted(grams.values(), reverse=True)
    top = min(int(np.sqrt(len(counts))), len(counts) - counts.count(1))
    return sum(counts[:top]) / sum(counts)


def _words(text: str) -> int:
    """White-space separated words, stripped of Data-Juicer's special characters (digits too)."""
    special = string.punctuation + string.digits + string.whitespace
    return len([word for word in text.split() if word.strip(special)])


@pytest.fixture(scope="module")
def stats() -> list[dict[str, float]]:
    return juicer.statistics(DOCS)


def test_the_statistics_are_the_ones_computed_by_hand(stats):
    for text, found in zip(DOCS, stats, strict=True):
        assert found["text_len"] == len(text)
        assert found["alnum_ratio"] == pytest.approx(_alnum_ratio(text))
        assert found["special_char_ratio"] == pytest.approx(_special_ratio(text))
        assert found["char_rep_ratio"] == pytest.approx(_char_rep_ratio(text))
        assert found["num_words"] == _words(text)


@pytest.mark.parametrize(
    ("recipe", "operator", "rule"),
    [
        (Recipe(min_text_len=10), "text_length_filter", lambda t: len(t) >= 10),
        (Recipe(max_text_len=45), "text_length_filter", lambda t: len(t) <= 45),
        (Recipe(min_alnum_ratio=0.7), "alphanumeric_filter", lambda t: _alnum_ratio(t) >= 0.7),
        (
            Recipe(max_char_rep_ratio=0.2),
            "character_repetition_filter",
            lambda t: _char_rep_ratio(t) <= 0.2,
        ),
        (
            Recipe(max_special_char_ratio=0.3),
            "special_characters_filter",
            lambda t: _special_ratio(t) <= 0.3,
        ),
        (Recipe(min_num_words=5), "words_num_filter", lambda t: _words(t) >= 5),
    ],
)
def test_each_filter_drops_the_documents_its_rule_rejects(stats, recipe, operator, rule):
    processed = juicer.process(DOCS, stats, recipe)

    expected = [i for i, text in enumerate(DOCS) if rule(text)]
    assert list(processed.kept) == expected
    assert processed.dropped[operator] == len(DOCS) - len(expected)
    assert sum(processed.dropped.values()) == processed.dropped[operator]


def test_deduplication_keeps_the_first_of_equal_documents(stats):
    processed = juicer.process(DOCS, stats, Recipe(dedup=True))

    assert list(processed.kept) == [0, 1, 2, 3, 4, 6]
    assert processed.dropped["document_deduplicator"] == 1


def test_a_document_is_counted_once_by_the_first_operator_that_drops_it(stats):
    recipe = Recipe(min_text_len=10, min_num_words=5, dedup=True)

    processed = juicer.process(DOCS, stats, recipe)

    assert processed.dropped["text_length_filter"] == 1  # "x = 1", which has too few words too
    assert processed.dropped["words_num_filter"] == 2  # "abab..." (1 word), the digits (none)
    assert processed.dropped["document_deduplicator"] == 1
    assert list(processed.kept) == [0, 2, 6]


def test_the_default_recipe_keeps_everything(stats):
    processed = juicer.process(DOCS, stats, recipe_of({}))

    assert list(processed.kept) == list(range(len(DOCS)))
    assert set(processed.dropped) == set(juicer.OPERATORS)


def test_the_recipe_is_data_juicers_process_list():
    process = Recipe(min_text_len=5, max_text_len=0, min_num_words=3, dedup=True).process_list()

    assert [next(iter(step)) for step in process] == list(juicer.OPERATORS)
    assert process[0]["text_length_filter"]["min_len"] == 5
    assert process[0]["text_length_filter"]["max_len"] > 10**12  # 0: no maximum
    assert process[4]["words_num_filter"] == {"lang": "en", "tokenization": False, "min_num": 3}


def test_a_recipe_reads_its_properties_and_ignores_the_others():
    recipe = recipe_of(
        {"min_alnum_ratio": 0.5, "dedup": 1, "model_size": "tiny", "max_text_len": 9}
    )

    assert recipe == Recipe(min_alnum_ratio=0.5, dedup=True, max_text_len=9)
    assert set(RECIPE_DEFAULTS) == set(Recipe.__dataclass_fields__)


@pytest.mark.parametrize(
    ("properties", "sentence"),
    [
        (
            {"min_text_len": 500, "max_text_len": 100},
            "min_text_len 500 is above max_text_len 100: no document can pass",
        ),
        ({"min_alnum_ratio": 1.5}, "min_alnum_ratio must be a number from 0 to 1, not 1.5"),
        ({"max_special_char_ratio": "low"}, "max_special_char_ratio must be a number from 0 to 1"),
        ({"min_num_words": -1}, "min_num_words must be a whole number of at least 0, not -1"),
        ({"dedup": "yes"}, "dedup must be true or false (1 or 0), not 'yes'"),
        ({"dedup": 2}, "dedup must be true or false (1 or 0), not 2"),
    ],
)
def test_a_recipe_that_is_not_one_is_refused_in_one_sentence(properties, sentence):
    with pytest.raises(PlanError) as caught:
        recipe_of(properties)

    assert str(caught.value).startswith(sentence)
