"""The data_recipe corpus: real standard-library text, a fixed selection, the evaluation prose
held apart from the training pool."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from discospace.actuator.data_recipe import corpus as corpus_module
from discospace.actuator.data_recipe.corpus import (
    SOURCES,
    CorpusError,
    build_corpus,
    is_prose,
    ordered,
    paragraphs,
    stdlib_root,
)


def test_a_document_is_a_dedented_paragraph_between_blank_lines():
    text = "def f():\n    '''Doc.'''\n\n    x = 1\n   \n\n    return x\n"

    assert paragraphs(text) == ["def f():\n    '''Doc.'''", "x = 1", "return x"]


def test_the_selection_order_depends_on_the_paths_only_never_on_the_listing_order():
    root = Path("/lib")
    paths = [root / f"m{i}.py" for i in range(40)]
    shuffled = random.Random(7).sample(paths, len(paths))

    assert ordered(root, paths) == ordered(root, shuffled)
    assert ordered(root, paths) != sorted(p.name for p in paths)


def test_the_corpus_is_the_same_when_built_again():
    first = build_corpus()
    build_corpus.cache_clear()

    second = build_corpus()

    assert second == first
    assert second.digest == first.digest


def test_the_pool_takes_its_files_from_each_source_and_real_dirt_is_in_it():
    corpus = build_corpus()
    files = Counter(document.source for document in corpus.documents)
    per_source = {
        source: len({d.path for d in corpus.documents if d.source == source}) for source in files
    }

    assert per_source == {source.name: source.count for source in SOURCES}
    assert all(
        d.path.startswith("encodings/") for d in corpus.documents if d.source == "codec_tables"
    )
    assert any("\\x00" in d.text for d in corpus.documents)  # a codec's decoding table
    assert corpus.name.startswith("cpython-3.")
    assert corpus.name.endswith("-stdlib-v1")


def test_the_evaluation_prose_comes_from_other_files_and_never_occurs_in_the_training_text():
    corpus = build_corpus()
    training_text = "\n".join(corpus.texts)

    assert not set(corpus.evaluation_files) & set(corpus.training_files)
    assert all(name.endswith(".py") for name in corpus.evaluation_files)
    assert sum(map(len, corpus.evaluation)) >= corpus_module.EVAL_CHARS
    assert not [p for p in corpus.evaluation if p in training_text]
    assert all(is_prose(p) for p in corpus.evaluation)


def test_prose_is_sentences_without_code_or_doctests():
    assert is_prose("Return the number of items in the queue, which may be stale.")
    assert not is_prose("Too short to count.")
    assert not is_prose("Example of use, which shows what it returns:\n>>> f(1)\n2")
    assert not is_prose("Arguments of the function, one per line below:\n    x: the value")


def _fake_stdlib(root: Path, with_test_data: bool) -> Path:
    for i in range(60):
        (root / f"mod{i}.py").write_text(
            f'"""Module {i}: a docstring of plenty of words here."""\n'
        )
    (root / "encodings").mkdir()
    for i in range(8):
        (root / "encodings" / f"cp{i}.py").write_text(f"decoding_table = ('\\x0{i}')\n")
    if with_test_data:
        (root / "test" / "decimaltestdata").mkdir(parents=True)
        for i in range(12):
            (root / "test" / "decimaltestdata" / f"t{i}.decTest").write_text(
                f"add{i} add 1 1 -> 2\n"
            )
    return root


def test_a_standard_library_without_its_test_data_cannot_build_the_corpus(tmp_path: Path):
    root = _fake_stdlib(tmp_path, with_test_data=False)

    with pytest.raises(CorpusError, match=r"has 0 files for the corpus's test_data, fewer than"):
        build_corpus(root)


def test_a_small_standard_library_builds_a_corpus_with_held_out_modules(tmp_path: Path):
    corpus = build_corpus(_fake_stdlib(tmp_path, with_test_data=True))

    assert len(corpus.documents) == 50 + 8 + 12
    assert len(corpus.evaluation_files) == 10
    assert stdlib_root() != tmp_path
