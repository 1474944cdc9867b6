"""A data recipe: the thresholds of the text filters and whether to deduplicate, read from an
entity's properties, and the Data-Juicer process list it stands for.

Each numeric property is named `min_<stat>` or `max_<stat>` after the Data-Juicer statistic it
bounds (`text_len`, `alnum_ratio`, `char_rep_ratio`, `special_char_ratio`, `num_words`), so the
probe's `raw_<stat>_mean` and `raw_<stat>_std` say where Data-Juicer's k-sigma rule would put it
(mean ± k·std; the pipeline's `k_sigma` hook narrows by the best recipes' values instead, and
reads no statistic). The defaults keep every document: a recipe states only the filters it
means.

- `min_text_len`, `max_text_len` (default 0, 0: no maximum): `text_length_filter`'s `min_len`,
  `max_len`, in characters;
- `min_alnum_ratio` (0.0): `alphanumeric_filter`'s `min_ratio`, letters and digits per character;
- `max_char_rep_ratio` (1.0): `character_repetition_filter`'s `max_ratio` (10-gram repetition);
- `max_special_char_ratio` (1.0): `special_characters_filter`'s `max_ratio`: digits,
  punctuation, white space and symbols per character;
- `min_num_words` (0): `words_num_filter`'s `min_num`, white-space separated words, those made
  only of punctuation or symbols not counted (`=`, `.`: Data-Juicer's word refinement);
- `dedup` (false): `document_deduplicator` (exact: the MD5 of the stripped text), after the
  filters.

A property that is not a number in its range, or a minimum above its maximum, is a
`PlanError` (one sentence): the configuration, not the machine, is at fault.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from discospace.actuator.cpu_train.plan import PlanError, whole_number
from discospace.core.canonical import Value

CHARACTER_REPETITION_N = 10
"""`character_repetition_filter`'s `rep_len`: Data-Juicer's default."""


@dataclass(frozen=True)
class Recipe:
    """What the filters keep; the defaults keep everything."""

    min_text_len: int = 0
    max_text_len: int = 0
    """0: no maximum."""
    min_alnum_ratio: float = 0.0
    max_char_rep_ratio: float = 1.0
    max_special_char_ratio: float = 1.0
    min_num_words: int = 0
    dedup: bool = False

    def process_list(self) -> list[dict[str, dict[str, Any]]]:
        """The recipe as Data-Juicer's `process:` list: operator name and arguments, in order."""
        process: list[dict[str, dict[str, Any]]] = [
            {
                "text_length_filter": {
                    "min_len": self.min_text_len,
                    "max_len": self.max_text_len or sys.maxsize,
                }
            },
            {"alphanumeric_filter": {"tokenization": False, "min_ratio": self.min_alnum_ratio}},
            {
                "character_repetition_filter": {
                    "rep_len": CHARACTER_REPETITION_N,
                    "min_ratio": 0.0,
                    "max_ratio": self.max_char_rep_ratio,
                }
            },
            {
                "special_characters_filter": {
                    "min_ratio": 0.0,
                    "max_ratio": self.max_special_char_ratio,
                }
            },
            {
                "words_num_filter": {
                    "lang": "en",
                    "tokenization": False,
                    "min_num": self.min_num_words,
                }
            },
        ]
        if self.dedup:
            process.append(
                {"document_deduplicator": {"lowercase": False, "ignore_non_character": False}}
            )
        return process


RECIPE_DEFAULTS: dict[str, Value] = dict(asdict(Recipe()))
"""The recipe properties and their defaults, as the catalog offers them."""


def recipe_of(properties: Mapping[str, Value]) -> Recipe:
    """The recipe `properties` describe (defaults for what they lack), or a `PlanError`."""
    values = {**RECIPE_DEFAULTS, **{k: v for k, v in properties.items() if k in RECIPE_DEFAULTS}}
    recipe = Recipe(
        min_text_len=whole_number(values, "min_text_len", minimum=0),
        max_text_len=whole_number(values, "max_text_len", minimum=0),
        min_alnum_ratio=ratio(values, "min_alnum_ratio"),
        max_char_rep_ratio=ratio(values, "max_char_rep_ratio"),
        max_special_char_ratio=ratio(values, "max_special_char_ratio"),
        min_num_words=whole_number(values, "min_num_words", minimum=0),
        dedup=flag(values, "dedup"),
    )
    if recipe.max_text_len and recipe.min_text_len > recipe.max_text_len:
        raise PlanError(
            f"min_text_len {recipe.min_text_len} is above max_text_len {recipe.max_text_len}: "
            "no document can pass"
        )
    return recipe


def ratio(properties: Mapping[str, Value], name: str) -> float:
    """The property `name`, a number from 0 to 1."""
    value = properties.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise PlanError(f"{name} must be a number from 0 to 1, not {value!r}")
    return float(value)


def flag(properties: Mapping[str, Value], name: str) -> bool:
    """The property `name`: true or false (1 or 0)."""
    value = properties.get(name)
    if isinstance(value, str) or value not in (0, 1):
        raise PlanError(f"{name} must be true or false (1 or 0), not {value!r}")
    return bool(value)
