"""Data-Juicer's own operators, used as a library: the statistics of documents, and what a
recipe keeps of them.

- `statistics(texts)`: each document's five statistics (`text_len`, `alnum_ratio`,
  `char_rep_ratio`, `special_char_ratio`, `num_words`), computed by the filters'
  `compute_stats_batched`, as Data-Juicer's analyzer computes them;
- `process(texts, stats, recipe)`: the recipe's filters in order (each op's `process_batched`
  decides on the documents the earlier ones kept), then `document_deduplicator` when the
  recipe deduplicates; which documents survive, and how many each operator dropped.

The operators are built from the recipe's process list through Data-Juicer's `OPERATORS`
registry, as a Data-Juicer config's `process:` builds them. Data-Juicer is imported on first
use only (it takes seconds), with the Hugging Face libraries told to stay offline; a missing
install is a `DataJuicerMissingError` naming the extra to install, never an attempt to download.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from discospace.actuator.data_recipe.recipe import Recipe

STATS = ("text_len", "alnum_ratio", "char_rep_ratio", "special_char_ratio", "num_words")
"""Data-Juicer's names of the statistics the filters compute, in the filters' order."""
FILTERS = (
    "text_length_filter",
    "alphanumeric_filter",
    "character_repetition_filter",
    "special_characters_filter",
    "words_num_filter",
)
DEDUPLICATOR = "document_deduplicator"
OPERATORS = (*FILTERS, DEDUPLICATOR)
"""Every operator a recipe may run, in the order it runs them."""
INSTALL = "pip install 'discospace-actuator[data]' (services/actuator[data])"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
_REQUIRED = ("data_juicer", "datasets", "ray")
"""Data-Juicer's base operator imports its Ray tracer, and would install a missing Ray."""


class DataJuicerMissingError(RuntimeError):
    """py-data-juicer (or what its operators import) is not installed here; one sentence."""


@dataclass(frozen=True)
class Processed:
    """What a recipe kept of the documents."""

    kept: tuple[int, ...]
    """Indices of the surviving documents, in corpus order."""
    dropped: dict[str, int]
    """Documents each operator dropped (among those the earlier ones kept), by operator name."""


@dataclass(frozen=True)
class _Juicer:
    """What this module uses of Data-Juicer, once imported."""

    registry: Any
    stats_key: str
    hash_key: str
    dataset_type: Any


@cache
def _juicer() -> _Juicer:
    """Data-Juicer's operator registry and the names it uses, imported once per process."""
    missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        raise DataJuicerMissingError(
            f"the data_recipe actuator needs {', '.join(missing)}: {INSTALL}"
        )
    for name, value in OFFLINE.items():
        os.environ.setdefault(name, value)
    import data_juicer.ops
    import datasets
    from data_juicer.utils.constant import Fields, HashKeys

    datasets.disable_progress_bars()
    return _Juicer(data_juicer.ops.OPERATORS, Fields.stats, HashKeys.hash, datasets.Dataset)


def operator(name: str, arguments: dict[str, Any] | None = None) -> Any:
    """Data-Juicer's operator `name`, built with `arguments`."""
    return _juicer().registry.modules[name](**(arguments or {}))


def statistics(texts: Sequence[str]) -> list[dict[str, float]]:
    """Each document's five statistics, by Data-Juicer's filters (default arguments)."""
    stats_key = _juicer().stats_key
    batch: dict[str, Any] = {"text": list(texts), stats_key: [{} for _ in texts]}
    for name in FILTERS:
        operator(name).compute_stats_batched(batch)
    return [{stat: float(values[stat]) for stat in STATS} for values in batch[stats_key]]


def process(texts: Sequence[str], stats: Sequence[dict[str, float]], recipe: Recipe) -> Processed:
    """Runs the recipe's operators in order over the documents whose statistics are `stats`."""
    stats_key = _juicer().stats_key
    kept = list(range(len(texts)))
    dropped: dict[str, int] = dict.fromkeys(OPERATORS, 0)
    for step in recipe.process_list():
        [(name, arguments)] = step.items()
        op = operator(name, arguments)
        if name == DEDUPLICATOR:
            survivors = _deduplicated(op, texts, kept)
        else:
            batch = {"text": [texts[i] for i in kept], stats_key: [dict(stats[i]) for i in kept]}
            keep = list(op.process_batched(op.compute_stats_batched(batch)))
            survivors = [i for i, kept_it in zip(kept, keep, strict=True) if kept_it]
        dropped[name] = len(kept) - len(survivors)
        kept = survivors
    return Processed(tuple(kept), dropped)


def _deduplicated(op: Any, texts: Sequence[str], kept: list[int]) -> list[int]:
    """The documents `document_deduplicator` keeps: the first of each group of equal texts."""
    juicer = _juicer()
    hashes = [op.compute_hash({"text": texts[i]})[juicer.hash_key] for i in kept]
    dataset = juicer.dataset_type.from_dict(
        {"text": [texts[i] for i in kept], juicer.hash_key: hashes, "index": kept}
    )
    survivors, _ = op.process(dataset)
    return [int(i) for i in survivors["index"]]
