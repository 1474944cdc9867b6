"""The shipped hooks against tables worked by hand: k_sigma, prune_invalid, top_k."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from discospace.core import DiscoverySpace
from discospace.core.errors import PipelineError
from discospace.core.hooks import (
    HOOK_GROUP,
    HookContext,
    MeasuredRow,
    k_sigma,
    load_hook,
    prune_invalid,
    top_k,
)
from discospace.core.pipelines import hook_names
from discospace.core.spec import ExperimentRef, PropertySpec, SpaceSpec

SPACE = SpaceSpec(
    sample_store="hand",
    entity_space=(
        PropertySpec(name="batch_size", values=(1, 2, 4, 8, 16)),
        PropertySpec(name="lr", range=(0.0, 1.0)),
        PropertySpec(name="layers", range=(0, 10), interval=2),
        PropertySpec(name="model", values=("tiny", "small", "big")),
    ),
    measurement_space=(ExperimentRef(actuator="cpu_train", experiment="train"),),
)


def row(entity: str, bs: int, lr: float, layers: int, model: str, tps: float | None) -> MeasuredRow:
    """One `train` measurement; no tps means it was invalid."""
    values = {"batch_size": bs, "lr": lr, "layers": layers, "model": model}
    results = {} if tps is None else {"tps": tps}
    return MeasuredRow(entity, values, "train", results, valid=tps is not None)


ROWS = (
    row("e1", 1, 0.1, 0, "tiny", 10.0),
    row("e2", 2, 0.2, 2, "tiny", 20.0),
    row("e3", 4, 0.3, 4, "small", 30.0),
    row("e4", 8, 0.4, 6, "small", 40.0),
    row("e5", 16, 0.9, 8, "big", None),
)


def context(args: Mapping[str, Any], rows: Sequence[MeasuredRow] = ROWS) -> HookContext:
    return HookContext(space=SPACE, space_id="space-hand", rows=rows, results={}, args=args, seed=0)


def properties(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    space = SpaceSpec.model_validate(result["space"])
    return {p.name: p.model_dump(exclude_none=True) for p in space.entity_space}


MAX_TPS = {"property": "tps", "direction": "max"}

# The best half (good_fraction 0.5, rounded up) of the 4 valid entities by tps: e4 (40), e3 (30).
# batch_size 8, 4: mean 6, sample sigma sqrt(((8-6)^2 + (4-6)^2) / 1) = sqrt(8) = 2.828...
# lr 0.4, 0.3: mean 0.35, sigma sqrt(2 * 0.05^2) = 0.0707...
# layers 6, 4: mean 5, sigma sqrt(2) = 1.414...
SIGMA_BS, SIGMA_LR, SIGMA_LAYERS = math.sqrt(8), math.sqrt(2 * 0.05**2), math.sqrt(2)


def test_k_sigma_narrows_each_numeric_property_to_mean_plus_minus_k_sigma_of_the_good() -> None:
    result = k_sigma(context({"job": "probe", "k": 1, "objective": MAX_TPS}))

    narrowed = result["narrowed"]
    assert isinstance(narrowed, dict)
    # batch_size: [6 - 2.83, 6 + 2.83] = [3.17, 8.83] keeps the listed values 4 and 8
    assert narrowed["batch_size"] == [4, 8]
    # lr (continuous): [0.35 - 0.0707, 0.35 + 0.0707]
    assert narrowed["lr"] == pytest.approx([0.35 - SIGMA_LR, 0.35 + SIGMA_LR])
    # layers (range 0..8 step 2): [5 - 1.41, 5 + 1.41] = [3.59, 6.41] keeps the grid points 4, 6
    assert narrowed["layers"] == [4, 6]
    assert set(narrowed) == {"batch_size", "lr", "layers"}  # model is not numeric
    refined = properties(result)
    assert refined["batch_size"]["values"] == (4, 8)
    assert refined["lr"]["range"] == pytest.approx((0.35 - SIGMA_LR, 0.35 + SIGMA_LR))
    assert (refined["layers"]["range"], refined["layers"]["interval"]) == ((4, 8), 2)
    assert refined["model"] == SPACE.entity_space[3].model_dump(exclude_none=True)


def test_the_refined_space_is_a_sub_space_sharing_the_store_and_the_experiments() -> None:
    result = k_sigma(context({"job": "probe", "k": 1, "objective": MAX_TPS}))

    refined = SpaceSpec.model_validate(result["space"])
    assert DiscoverySpace.from_spec(refined).is_subspace_of(DiscoverySpace.from_spec(SPACE))
    assert (refined.sample_store, refined.measurement_space) == ("hand", SPACE.measurement_space)


def test_k_sigma_clamps_the_interval_to_the_domain() -> None:
    result = k_sigma(context({"job": "probe", "k": 10, "objective": MAX_TPS}))

    narrowed = result["narrowed"]
    assert isinstance(narrowed, dict)
    assert narrowed["lr"] == [0.0, 1.0]  # 0.35 -/+ 0.707 goes past both ends
    assert narrowed["batch_size"] == [1, 16]  # 6 -/+ 28.3: every listed value
    assert narrowed["layers"] == [0, 8]


def test_k_sigma_keeps_the_good_values_when_no_listed_value_is_inside() -> None:
    # k = 0: the interval is the mean alone, 6, which batch_size does not list.
    result = k_sigma(context({"job": "probe", "k": 0, "objective": MAX_TPS}))

    narrowed = result["narrowed"]
    assert isinstance(narrowed, dict)
    assert narrowed["batch_size"] == [4, 8]
    assert properties(result)["batch_size"]["values"] == (4, 8)
    assert properties(result)["layers"]["range"] == (4, 8)  # the grid points 4 and 6
    assert properties(result)["lr"]["values"] == (0.35,)  # a continuous point: its one value


def test_without_an_objective_every_entity_measured_valid_is_good() -> None:
    # e1..e4: batch_size 1, 2, 4, 8: mean 3.75, sigma sqrt((7.5625+3.0625+0.0625+18.0625)/3)
    sigma = math.sqrt((2.75**2 + 1.75**2 + 0.25**2 + 4.25**2) / 3)
    assert sigma == pytest.approx(3.0957, abs=1e-4)

    result = k_sigma(context({"job": "probe", "k": 1, "properties": ["batch_size"]}))

    # [3.75 - 3.10, 3.75 + 3.10] = [0.65, 6.85]: 1, 2 and 4
    assert result["narrowed"] == {"batch_size": [1, 4]}
    assert properties(result)["batch_size"]["values"] == (1, 2, 4)
    assert properties(result)["lr"]["range"] == (0.0, 1.0)  # not named: unchanged


def test_a_good_fraction_of_one_entity_fixes_a_continuous_property_to_its_value() -> None:
    result = k_sigma(context({"job": "probe", "good_fraction": 0.1, "objective": MAX_TPS}))

    assert properties(result)["lr"]["values"] == (0.4,)
    assert properties(result)["batch_size"]["values"] == (8,)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"properties": ["model"]}, "k_sigma narrows numeric properties only, not 'model'"),
        ({"properties": ["nope"]}, "k_sigma cannot narrow 'nope': the space has no such property"),
        ({"objective": {"property": "loss"}}, "no measurement of job 'probe' has 'loss'"),
        ({"good_fraction": 0}, r"hook 'k_sigma' args: good_fraction: input should be greater"),
        ({"kk": 1}, r"hook 'k_sigma' args: kk: is not a known field"),
    ],
)
def test_k_sigma_refuses_what_it_cannot_narrow_with_one_sentence(
    args: dict[str, Any], problem: str
) -> None:
    with pytest.raises(PipelineError, match=problem):
        k_sigma(context({"job": "probe", **args}))


def test_k_sigma_with_no_valid_entity_says_so() -> None:
    invalid = [row("e5", 16, 0.9, 8, "big", None)]
    with pytest.raises(PipelineError, match="k_sigma found no valid entity in job 'probe'"):
        k_sigma(context({"job": "probe"}, invalid))


def test_prune_invalid_drops_a_value_only_invalid_measurements_have() -> None:
    rows = (*ROWS, row("e6", 16, 0.5, 8, "big", None), row("e7", 1, 0.5, 8, "tiny", None))

    result = prune_invalid(context({"job": "probe"}, rows))

    # batch_size 16 and model big: every row with them is invalid; batch_size 1 and model tiny
    # have a valid row too (e1); nothing is listed for lr (continuous) or layers (a range).
    assert result["pruned"] == {"batch_size": [16], "model": ["big"]}
    refined = properties(result)
    assert refined["batch_size"]["values"] == (1, 2, 4, 8)
    assert refined["model"]["values"] == ("tiny", "small")
    assert refined["lr"] == SPACE.entity_space[1].model_dump(exclude_none=True)
    assert refined["layers"] == SPACE.entity_space[2].model_dump(exclude_none=True)


def test_prune_invalid_keeps_values_never_measured_and_never_drops_every_value() -> None:
    rows = [row("e1", 1, 0.1, 0, "tiny", None), row("e2", 2, 0.2, 2, "tiny", None)]

    result = prune_invalid(context({"job": "probe"}, rows))

    # model: tiny is the only value measured and only invalid: small and big stay.
    # batch_size: 1 and 2 go, 4, 8 and 16 were never measured.
    assert result["pruned"] == {"batch_size": [1, 2], "model": ["tiny"]}
    every_invalid = [
        row(f"e{v}", v, 0.1, 0, model, None)
        for v, model in ((1, "tiny"), (2, "small"), (4, "big"), (8, "big"), (16, "big"))
    ]
    assert prune_invalid(context({}, every_invalid))["pruned"] == {}


def test_top_k_gives_the_k_best_entities_best_first() -> None:
    result = top_k(context({"job": "search", "k": 3, "objective": MAX_TPS}))

    assert result == {
        "entities": [
            {"batch_size": 8, "lr": 0.4, "layers": 6, "model": "small"},
            {"batch_size": 4, "lr": 0.3, "layers": 4, "model": "small"},
            {"batch_size": 2, "lr": 0.2, "layers": 2, "model": "tiny"},
        ],
        "entity_ids": ["e4", "e3", "e2"],
        "values": [40.0, 30.0, 20.0],
        "best_values": {"tps": 40.0},
    }


def test_top_k_breaks_ties_by_entity_id_whatever_order_the_rows_came_in() -> None:
    rows = (
        row("c", 1, 0.1, 0, "tiny", 5.0),
        row("b", 2, 0.2, 2, "tiny", 5.0),
        row("a", 4, 0.3, 4, "tiny", 7.0),
        row("d", 8, 0.3, 4, "tiny", 5.0),
    )
    minimise = {"job": "s", "k": 2, "objective": {"property": "tps", "direction": "minimize"}}

    assert top_k(context(minimise, rows))["entity_ids"] == ["b", "c"]
    assert top_k(context(minimise, rows[::-1]))["entity_ids"] == ["b", "c"]


def test_top_k_reads_the_objective_by_cores_rule_for_a_bare_target() -> None:
    profiled = MeasuredRow("e1", ROWS[0].values, "profile", {"tps": 99.0}, valid=True)
    rows = (*ROWS, profiled)

    bare = top_k(context({"k": 1, "objective": MAX_TPS}, rows))
    named = top_k(
        context({"k": 1, "objective": {"property": "profile.tps", "direction": "max"}}, rows)
    )

    assert (bare["entity_ids"], bare["values"]) == (["e4"], [40.0])  # train measures tps first
    assert (named["entity_ids"], named["values"]) == (["e1"], [99.0])


def test_top_k_of_fewer_entities_than_k_gives_them_all_and_of_none_says_so() -> None:
    assert top_k(context({"k": 10, "objective": MAX_TPS}))["entity_ids"] == ["e4", "e3", "e2", "e1"]
    with pytest.raises(PipelineError, match="top_k found no valid value of 'tps' in job 'x'"):
        top_k(context({"job": "x", "k": 1, "objective": MAX_TPS}, ROWS[4:]))
    with pytest.raises(PipelineError, match=r"hook 'top_k' args: k: is required"):
        top_k(context({"objective": MAX_TPS}))


def test_the_shipped_hooks_are_installed_as_entry_points() -> None:
    assert {"k_sigma", "prune_invalid", "top_k"} <= set(hook_names())
    assert load_hook("top_k") is top_k
    assert HOOK_GROUP == "discospace.hooks"


def test_an_unknown_hook_is_one_sentence_naming_the_installed_ones() -> None:
    with pytest.raises(PipelineError, match="hook 'k_sigmaa' is not known: use k_sigma, "):
        load_hook("k_sigmaa")


def test_a_narrowed_continuous_range_stays_continuous_with_whole_number_ends() -> None:
    wide = SPACE.model_copy(
        update={
            "entity_space": (PropertySpec(name="lr", range=(0, 100), type="continuous"),),
        }
    )
    rows = [
        MeasuredRow(entity, {"lr": lr}, "train", {"tps": 1.0}, valid=True)
        for entity, lr in (("a", 10), ("b", 20), ("c", 30))
    ]
    ctx = HookContext(space=wide, space_id="s", rows=rows, results={}, args={"k": 1}, seed=0)

    result = k_sigma(ctx)

    # 10, 20, 30: mean 20, sample sigma 10: [10.0, 30.0]
    assert result["narrowed"] == {"lr": [10.0, 30.0]}
    again = SpaceSpec.model_validate_json(
        SpaceSpec.model_validate(result["space"]).model_dump_json()
    )
    assert DiscoverySpace.from_spec(again).entity_space.properties[0].domain.kind == "continuous"


def test_k_sigma_never_leaves_the_space_it_narrows_when_the_rows_lie_outside_it() -> None:
    """Rows of another space (a job on a wider one): the narrowed space stays inside SPACE."""
    outside = (
        row("o1", 32, 1.5, 12, "tiny", 50.0),
        row("o2", 64, 1.7, 14, "tiny", 60.0),
    )
    result = k_sigma(context({"job": "probe", "k": 1, "objective": MAX_TPS}, outside))
    space = DiscoverySpace.from_spec(SpaceSpec.model_validate(result["space"]))
    whole = DiscoverySpace.from_spec(SPACE).entity_space

    assert properties(result)["batch_size"]["values"] == (16,)  # the listed value nearest
    assert properties(result)["lr"]["values"] == (1,)  # the domain's end, not the mean 1.6
    assert properties(result)["layers"] == {"name": "layers", "range": (8, 10), "interval": 2}
    inside = [whole.why_not(entity.as_dict()) for entity in space.entity_space.sequential()]
    assert inside == [None] * len(inside)


def test_k_sigma_with_a_huge_k_keeps_the_whole_space() -> None:
    spread = (row("a", 1, 0.1, 0, "tiny", 30.0), row("b", 16, 0.9, 8, "tiny", 40.0))
    # k * sigma overflows to infinity for every property
    args = {"job": "probe", "k": 1e308, "objective": MAX_TPS, "good_fraction": 1}
    result = k_sigma(context(args, spread))

    assert properties(result)["batch_size"]["values"] == (1, 2, 4, 8, 16)
    assert properties(result)["layers"] == {"name": "layers", "range": (0, 10), "interval": 2}
