"""The registry's pure decisions: fold catalogs and registrations, answer submissions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.events import (
    MAX_MESSAGE_BYTES,
    ActuatorRegistered,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    decode,
    encode,
    new_event,
)
from discospace.events.envelope import MAX_OPERATION_REASON_CHARS
from discospace.registry.domain import (
    RegistryState,
    decide_submission,
    evolve,
    registration_event_id,
)

AT = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)

THROUGHPUT = ExperimentSpec(
    actuator="synthetic",
    experiment="throughput-v1",
    target_properties=("tokens_per_second", "peak_memory_mib"),
    required_properties=("batch_size", "number_gpus"),
    optional_properties={"steps": 5},
)
ENERGY = ExperimentSpec(
    actuator="synthetic",
    experiment="energy-v1",
    target_properties=("joules_per_token",),
    required_properties=("batch_size", "throughput-v1.tokens_per_second"),
)


def clock() -> datetime:
    return AT


def announced(*experiments: ExperimentSpec, actuator: str = "synthetic", pool: str = "cpu"):
    return new_event(
        ActuatorRegistered,
        clock,
        actuator=actuator,
        pool=pool,
        experiments=experiments,
        worker_id=f"{pool}-worker-0",
    )


def spec(*refs: ExperimentRef, properties: tuple[PropertySpec, ...] | None = None) -> SpaceSpec:
    return SpaceSpec(
        sample_store="store-a",
        entity_space=properties
        or (
            PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
            PropertySpec(name="number_gpus", values=(1, 2)),
        ),
        measurement_space=refs
        or (ExperimentRef(actuator="synthetic", experiment="throughput-v1"),),
    )


def submitted(space: SpaceSpec, sid: str = "sub-1") -> SpaceSubmitted:
    return new_event(SpaceSubmitted, clock, submission_id=sid, spec=space, submitted_by="alice")


def state_with(*events: ActuatorRegistered | SpaceRegistered) -> RegistryState:
    state = RegistryState()
    for event in events:
        evolve(state, event)
    return state


def test_a_space_whose_experiments_an_actuator_offers_is_registered_with_its_catalog_entries():
    state = state_with(announced(THROUGHPUT))
    answer = decide_submission(state, submitted(spec()), AT)

    assert isinstance(answer, SpaceRegistered)
    assert answer.space_id.startswith("space-")
    assert answer.submission_id == "sub-1"
    assert [e.experiment for e in answer.experiments] == ["throughput-v1"]
    assert answer.experiments[0].target_properties == ("tokens_per_second", "peak_memory_mib")


def test_the_registration_id_comes_from_the_space_id_alone():
    first = decide_submission(state_with(announced(THROUGHPUT)), submitted(spec(), "sub-1"), AT)
    other = decide_submission(state_with(announced(THROUGHPUT)), submitted(spec(), "sub-2"), LATER)
    assert isinstance(first, SpaceRegistered)
    assert isinstance(other, SpaceRegistered)
    assert first.event_id == other.event_id == registration_event_id(first.space_id)
    assert first.space_id == other.space_id


def test_submitting_a_registered_space_again_gives_back_the_identical_registration():
    state = state_with(announced(THROUGHPUT))
    first = decide_submission(state, submitted(spec(), "sub-1"), AT)
    again = decide_submission(state, submitted(spec(), "sub-2"), LATER)
    assert again == first
    assert encode(again) == encode(first)


def test_reordered_properties_are_the_same_space():
    state = state_with(announced(THROUGHPUT))
    forward = spec()
    backward = spec(properties=tuple(reversed(forward.entity_space)))
    first = decide_submission(state, submitted(forward, "sub-1"), AT)
    again = decide_submission(state, submitted(backward, "sub-2"), AT)
    assert again == first


def test_a_registration_read_back_from_the_spaces_topic_is_remembered():
    registered = decide_submission(state_with(announced(THROUGHPUT)), submitted(spec()), AT)
    assert isinstance(registered, SpaceRegistered)
    restarted = state_with(decode(encode(registered)))  # type: ignore[arg-type]

    again = decide_submission(restarted, submitted(spec(), "sub-9"), LATER)

    assert again == registered
    assert restarted.is_registered(registered.space_id)


def test_the_first_registration_of_a_space_wins():
    state = state_with(announced(THROUGHPUT))
    first = decide_submission(state, submitted(spec(), "sub-1"), AT)
    assert isinstance(first, SpaceRegistered)
    impostor = first.model_copy(update={"submission_id": "sub-2"})
    evolve(state, impostor)
    assert decide_submission(state, submitted(spec(), "sub-3"), LATER) == first


def test_an_experiment_of_an_unregistered_actuator_is_rejected_naming_the_actuators_known():
    state = state_with(announced(THROUGHPUT))
    answer = decide_submission(
        state, submitted(spec(ExperimentRef(actuator="SFTTrainer", experiment="ft-v1"))), AT
    )
    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "experiment 'ft-v1' of actuator 'SFTTrainer' is not in the catalog "
        "(no actuator 'SFTTrainer' is registered; registered actuators: synthetic)"
    )
    assert str(answer.space_id).startswith("space-")
    assert (answer.submission_id, answer.correlation_id) == ("sub-1", "sub-1")


def test_an_experiment_the_actuator_does_not_offer_is_rejected_naming_what_it_offers():
    state = state_with(announced(THROUGHPUT))
    answer = decide_submission(
        state, submitted(spec(ExperimentRef(actuator="synthetic", experiment="latency-v1"))), AT
    )
    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "experiment 'latency-v1' of actuator 'synthetic' is not in the catalog "
        "(actuator 'synthetic' offers: throughput-v1)"
    )


def test_with_no_actuator_registered_the_rejection_says_so():
    answer = decide_submission(RegistryState(), submitted(spec()), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.reason.endswith("(no actuator has registered yet)")


def test_a_required_property_the_entity_space_lacks_is_rejected_naming_it():
    state = state_with(announced(THROUGHPUT))
    only_batch = (PropertySpec(name="batch_size", values=(1, 2)),)
    answer = decide_submission(state, submitted(spec(properties=only_batch)), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "experiment 'throughput-v1' requires property 'number_gpus', which the entity space lacks"
    )


def test_a_dependent_experiment_without_the_one_it_depends_on_is_rejected():
    state = state_with(announced(THROUGHPUT, ENERGY))
    answer = decide_submission(
        state, submitted(spec(ExperimentRef(actuator="synthetic", experiment="energy-v1"))), AT
    )
    assert isinstance(answer, SpaceRejected)
    assert "requires observed property 'throughput-v1.tokens_per_second'" in answer.reason


def test_a_dependent_experiment_with_the_one_it_depends_on_is_registered():
    state = state_with(announced(THROUGHPUT, ENERGY))
    refs = (
        ExperimentRef(actuator="synthetic", experiment="throughput-v1"),
        ExperimentRef(actuator="synthetic", experiment="energy-v1"),
    )
    answer = decide_submission(state, submitted(spec(*refs)), AT)
    assert isinstance(answer, SpaceRegistered)
    assert {e.experiment for e in answer.experiments} == {"throughput-v1", "energy-v1"}


def test_a_parameterization_of_an_unknown_option_is_rejected():
    state = state_with(announced(THROUGHPUT))
    ref = ExperimentRef(actuator="synthetic", experiment="throughput-v1", parameterization={"x": 1})
    answer = decide_submission(state, submitted(spec(ref)), AT)
    assert isinstance(answer, SpaceRejected)
    assert (
        answer.reason == "experiment 'throughput-v1' has no optional property 'x' to parameterize"
    )


def test_every_problem_is_given_in_one_reason():
    state = state_with(announced(THROUGHPUT))
    refs = (
        ExperimentRef(actuator="synthetic", experiment="throughput-v1"),
        ExperimentRef(actuator="synthetic", experiment="nope"),
    )
    only_batch = (PropertySpec(name="batch_size", values=(1, 2)),)
    answer = decide_submission(state, submitted(spec(*refs, properties=only_batch)), AT)
    assert isinstance(answer, SpaceRejected)
    assert "'nope' of actuator 'synthetic' is not in the catalog" in answer.reason
    assert "requires property 'number_gpus'" in answer.reason
    assert "\n" not in answer.reason


def test_a_domain_that_is_not_well_formed_is_rejected_without_a_space_id():
    bad = (PropertySpec(name="batch_size", values=()),)
    answer = decide_submission(
        state_with(announced(THROUGHPUT)), submitted(spec(properties=bad)), AT
    )
    assert isinstance(answer, SpaceRejected)
    assert answer.space_id is None
    assert "property 'batch_size' has no values" in answer.reason


@pytest.mark.parametrize(
    ("space", "reason"),
    [
        (
            spec(properties=(PropertySpec(name="batch_size", values=("a\ud800",)),)),
            "the space holds text that is not valid Unicode ('\\ud800', a lone surrogate)",
        ),
        (
            spec(properties=(PropertySpec(name="batch_size", range=(0, 1.5), interval=1e-300),)),
            "property 'batch_size' has a range of about 10^300 values",
        ),
        (
            spec(properties=(PropertySpec(name="batch_size", range=(0, 1e308), interval=1e-308),)),
            "property 'batch_size' has the whole number about 10^308 (a real number that is "
            "whole, such as 1e20, is one too), beyond 64 bits",
        ),
        (
            spec(
                properties=tuple(
                    PropertySpec(name=f"p{i}", range=(0, 2**52), interval=1) for i in range(20)
                )
            ),
            "the entity space has about 10^313 entities, over the limit of 10^300",
        ),
    ],
)
def test_a_space_that_cannot_be_hashed_or_counted_is_rejected_not_a_crash(
    space: SpaceSpec, reason: str
) -> None:
    """Each of these crashed the registry before (no `DiscospaceError` was raised for them), so
    nothing answered the submission. (The codec now refuses a lone surrogate read from Kafka;
    the space refuses it too, for whatever builds one in process.)"""
    answer = decide_submission(state_with(announced(THROUGHPUT)), submitted(space), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.space_id is None
    assert reason in answer.reason


def test_a_rejection_is_caused_by_its_submission_so_a_redelivery_gives_the_same_event():
    state = state_with(announced(THROUGHPUT))
    submission = submitted(spec(ExperimentRef(actuator="synthetic", experiment="nope")))
    first = decide_submission(state, submission, AT)
    again = decide_submission(state, submission, AT)
    assert first == again
    assert first.causation_id == submission.event_id


def test_a_later_announcement_of_a_pool_replaces_its_experiment_entries():
    changed = THROUGHPUT.model_copy(update={"target_properties": ("tokens_per_second",)})
    state = state_with(announced(THROUGHPUT), announced(changed))
    answer = decide_submission(state, submitted(spec()), AT)
    assert isinstance(answer, SpaceRegistered)
    assert answer.experiments[0].target_properties == ("tokens_per_second",)


def test_an_experiment_a_pool_no_longer_announces_is_no_longer_offered():
    state = state_with(announced(THROUGHPUT, ENERGY), announced(THROUGHPUT))
    energy = ExperimentRef(actuator="synthetic", experiment="energy-v1")
    throughput = ExperimentRef(actuator="synthetic", experiment="throughput-v1")
    answer = decide_submission(state, submitted(spec(throughput, energy)), AT)
    assert isinstance(answer, SpaceRejected)
    assert "'energy-v1' of actuator 'synthetic' is not in the catalog" in answer.reason
    assert "offers: throughput-v1" in answer.reason


@pytest.mark.parametrize("order", [("cpu", "gpu"), ("gpu", "cpu")])
def test_pools_defining_an_experiment_differently_reject_its_spaces_whatever_the_order(order):
    """A restart reads the pools' announcements in another order than the live registry did:
    the answer must not change with it."""
    narrower = THROUGHPUT.model_copy(update={"required_properties": ("batch_size",)})
    by_pool = {"cpu": announced(narrower, pool="cpu"), "gpu": announced(THROUGHPUT, pool="gpu")}
    state = state_with(*(by_pool[pool] for pool in order))
    answer = decide_submission(state, submitted(spec()), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "actuator 'synthetic' defines experiment 'throughput-v1' differently on pools cpu, gpu: "
        "a space using it could be measured by either definition; announce one definition on "
        "every pool, or name them apart"
    )
    evolve(state, announced(THROUGHPUT, pool="cpu"))  # the cpu pool upgraded: one definition
    assert isinstance(decide_submission(state, submitted(spec()), AT), SpaceRegistered)


def test_pools_defining_an_experiment_alike_but_for_its_words_are_no_conflict():
    """A description reworded, or targets listed in another order, rolled out one pool at a
    time, made the experiment unavailable for new spaces; a default of 1 on one pool and true
    on the other (Python has 1 == True) was no conflict, though a space setting the option
    false was refused as 'expects a number'."""
    reworded = THROUGHPUT.model_copy(
        update={
            "description": "tokens per second, timed",
            "target_properties": ("peak_memory_mib", "tokens_per_second"),
        }
    )
    state = state_with(announced(THROUGHPUT, pool="cpu"), announced(reworded, pool="gpu"))
    assert isinstance(decide_submission(state, submitted(spec()), AT), SpaceRegistered)
    one = THROUGHPUT.model_copy(update={"optional_properties": {"steps": 5, "fused": 1}})
    true = THROUGHPUT.model_copy(update={"optional_properties": {"steps": 5, "fused": True}})
    state = state_with(announced(one, pool="cpu"), announced(true, pool="gpu"))
    answer = decide_submission(state, submitted(spec()), AT)
    assert isinstance(answer, SpaceRejected)
    assert "defines experiment 'throughput-v1' differently on pools cpu, gpu" in answer.reason


def test_a_new_default_of_an_option_every_entity_gives_is_no_redefinition():
    """The space explores steps: each entity's own value is measured, never the default, yet a
    pool redeployed with another default refused the next space on the store, and the sampler
    the registered space's pairs."""
    steps = (*spec().entity_space, PropertySpec(name="steps", values=(5, 10)))
    state = state_with(announced(THROUGHPUT))
    assert isinstance(
        decide_submission(state, submitted(spec(properties=steps)), AT), SpaceRegistered
    )
    evolve(state, announced(THROUGHPUT.model_copy(update={"optional_properties": {"steps": 10}})))
    narrower = (PropertySpec(name="batch_size", values=(1, 2)), *steps[1:])
    answer = decide_submission(state, submitted(spec(properties=narrower), "sub-2"), AT)
    assert isinstance(answer, SpaceRegistered)


def test_a_rejection_naming_many_unknown_experiments_always_fits_a_message():
    """Each unknown experiment repeated what the actuator offers: 150 of them beside 300
    offered made a 1.6 MB rejection, never published (the submitter waited to its timeout)."""
    offered = [
        THROUGHPUT.model_copy(update={"experiment": f"offered-experiment-{n:03d}"})
        for n in range(300)
    ]
    refs = tuple(
        ExperimentRef(actuator="synthetic", experiment=f"missing-{n:03d}") for n in range(150)
    )
    answer = decide_submission(state_with(announced(*offered)), submitted(spec(*refs)), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.reason.count("offers:") == 1
    assert len(answer.reason) <= MAX_OPERATION_REASON_CHARS
    assert len(encode(answer)) < MAX_MESSAGE_BYTES


def test_what_an_actuator_offers_is_said_even_after_a_known_experiment_failed():
    """A known experiment with a bad parameterization took the actuator's one hint, and an
    unknown experiment after it got none."""
    bad = ExperimentRef(
        actuator="synthetic", experiment="throughput-v1", parameterization={"nope": 1}
    )
    unknown = ExperimentRef(actuator="synthetic", experiment="energy-v2")
    answer = decide_submission(state_with(announced(THROUGHPUT)), submitted(spec(bad, unknown)), AT)
    assert isinstance(answer, SpaceRejected)
    assert "is not in the catalog (actuator 'synthetic' offers: throughput-v1)" in answer.reason


def test_an_actuator_offering_nothing_now_is_said_so():
    """'actuator 'synthetic' offers: ' with nothing after it."""
    state = state_with(announced(THROUGHPUT), announced(actuator="synthetic"))
    ref = ExperimentRef(actuator="synthetic", experiment="throughput-v2")
    answer = decide_submission(state, submitted(spec(ref)), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "experiment 'throughput-v2' of actuator 'synthetic' is not in the catalog (actuator "
        "'synthetic' offers no experiment now)"
    )


def test_a_new_default_refuses_only_spaces_whose_entities_share_ids_with_the_old_results():
    """The store's first space explored steps (each entity measured with its own value); after a
    new default, a space without a steps property was refused, though none of its entities
    shares an id with the stored ones. A second space of the first one's properties settles
    what spaces of its properties are measured as."""
    steps = (*spec().entity_space, PropertySpec(name="steps", values=(5, 10)))
    state = state_with(announced(THROUGHPUT))
    assert isinstance(
        decide_submission(state, submitted(spec(properties=steps)), AT), SpaceRegistered
    )
    evolve(state, announced(THROUGHPUT.model_copy(update={"optional_properties": {"steps": 10}})))
    assert isinstance(decide_submission(state, submitted(spec(), "sub-2"), AT), SpaceRegistered)


def test_the_catalog_counts_each_experiment_once_however_many_pools_offer_it():
    state = state_with(announced(THROUGHPUT, pool="a"), announced(THROUGHPUT, pool="b"))
    assert len(state.catalog) == 1
    assert state.actuators == {"synthetic"}


def test_a_space_without_experiment_is_rejected_with_one_sentence() -> None:
    empty = SpaceSpec(
        sample_store="store-a",
        entity_space=(PropertySpec(name="batch_size", values=(1, 2)),),
        measurement_space=(),
    )
    answer = decide_submission(state_with(announced(THROUGHPUT)), submitted(empty), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.reason == "the measurement space has no experiment: a space needs at least one"


def test_an_experiment_whose_identifier_is_another_parameterized_is_not_offered():
    """`throughput-v1-steps.10` is the id of `throughput-v1` with steps 10: a space using the
    one would be handed the other's results by the store."""
    lookalike = THROUGHPUT.model_copy(
        update={"experiment": "throughput-v1-steps.10", "optional_properties": {}}
    )
    state = state_with(announced(THROUGHPUT, lookalike))
    ref = ExperimentRef(actuator="synthetic", experiment="throughput-v1-steps.10")
    answer = decide_submission(state, submitted(spec(ref)), AT)
    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "experiment 'throughput-v1-steps.10' of actuator 'synthetic' has the id of experiment "
        "'throughput-v1' of actuator 'synthetic' parameterized with steps.10: the store would "
        "hand one's results to the other; name it apart"
    )
    assert isinstance(decide_submission(state, submitted(spec()), AT), SpaceRegistered)


def test_a_store_keeping_another_actuators_results_under_the_same_id_rejects_the_space():
    """The store knows results by experiment id, not by actuator: a `throughput-v1` of
    `vllm` would have been handed the tokens per second `synthetic` measured, and back."""
    other = THROUGHPUT.model_copy(
        update={"actuator": "vllm", "target_properties": ("tokens_per_second",)}
    )
    state = state_with(announced(THROUGHPUT), announced(other, actuator="vllm", pool="a100"))
    first = decide_submission(state, submitted(spec()), AT)
    assert isinstance(first, SpaceRegistered)
    narrower = (PropertySpec(name="batch_size", values=(1, 2)), *spec().entity_space[1:])
    vllm = ExperimentRef(actuator="vllm", experiment="throughput-v1")

    answer = decide_submission(state, submitted(spec(vllm, properties=narrower), "sub-2"), AT)

    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "sample store 'store-a' keeps the results of experiment 'throughput-v1' of actuator "
        f"'synthetic' under the id 'throughput-v1' (space '{first.space_id}'): those of actuator "
        "'vllm' would be read as theirs; use another sample store"
    )
    elsewhere = spec(vllm, properties=narrower).model_copy(update={"sample_store": "store-b"})
    assert isinstance(decide_submission(state, submitted(elsewhere, "sub-3"), AT), SpaceRegistered)


def test_a_store_keeping_results_of_an_experiment_since_redefined_rejects_a_new_space():
    """Every pool redeployed `throughput-v1` measuring other targets: a new space on the
    store was registered, and handed the old results as its own (the sampler's memo keys by
    experiment id). A new default of an option the spaces set changes nothing."""
    state = state_with(announced(THROUGHPUT))
    first = decide_submission(state, submitted(spec()), AT)
    assert isinstance(first, SpaceRegistered)
    narrower = (PropertySpec(name="batch_size", values=(1, 2)), *spec().entity_space[1:])
    evolve(state, announced(THROUGHPUT.model_copy(update={"target_properties": ("energy",)})))

    answer = decide_submission(state, submitted(spec(properties=narrower), "sub-2"), AT)

    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "sample store 'store-a' keeps the results of experiment 'throughput-v1' of actuator "
        f"'synthetic' (id 'throughput-v1') as it was defined when space '{first.space_id}' was "
        "registered, and the catalog now defines it otherwise (its targets, required "
        "properties or options): the old results would be read as new ones; use another "
        "sample store"
    )
    pinned = ExperimentRef(
        actuator="synthetic", experiment="throughput-v1", parameterization={"steps": 7}
    )
    state = state_with(announced(THROUGHPUT))
    assert isinstance(decide_submission(state, submitted(spec(pinned)), AT), SpaceRegistered)
    evolve(state, announced(THROUGHPUT.model_copy(update={"optional_properties": {"steps": 9}})))
    again = submitted(spec(pinned, properties=narrower), "sub-2")
    assert isinstance(decide_submission(state, again, AT), SpaceRegistered)


def test_two_experiments_of_one_actuator_whose_parameterized_ids_read_alike_share_no_store():
    """`train` with option `lr-warmup: 5` and `train-lr` with `warmup: 5` are both
    `train-lr-warmup.5`: both spaces were registered on one store, which handed one
    experiment's results to the other."""
    train = THROUGHPUT.model_copy(
        update={"experiment": "train", "optional_properties": {"lr-warmup": 0}}
    )
    train_lr = THROUGHPUT.model_copy(
        update={"experiment": "train-lr", "optional_properties": {"warmup": 0}}
    )
    state = state_with(announced(train, train_lr))
    first_ref = ExperimentRef(
        actuator="synthetic", experiment="train", parameterization={"lr-warmup": 5}
    )
    first = decide_submission(state, submitted(spec(first_ref)), AT)
    assert isinstance(first, SpaceRegistered)
    ref = ExperimentRef(actuator="synthetic", experiment="train-lr", parameterization={"warmup": 5})

    answer = decide_submission(state, submitted(spec(ref), "sub-2"), AT)

    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "sample store 'store-a' keeps the results of experiment 'train' of actuator 'synthetic' "
        f"under the id 'train-lr-warmup.5' (space '{first.space_id}'): those of experiment "
        "'train-lr' would be read as theirs; use another sample store"
    )


def test_a_restarted_registry_knows_which_actuator_a_store_keeps_results_of():
    state = state_with(announced(THROUGHPUT))
    first = decide_submission(state, submitted(spec()), AT)
    assert isinstance(first, SpaceRegistered)
    other = THROUGHPUT.model_copy(update={"actuator": "vllm"})
    restarted = state_with(announced(THROUGHPUT), announced(other, actuator="vllm"), first)
    vllm = ExperimentRef(actuator="vllm", experiment="throughput-v1")
    narrower = (PropertySpec(name="batch_size", values=(4,)), *spec().entity_space[1:])

    answer = decide_submission(restarted, submitted(spec(vllm, properties=narrower)), AT)

    assert isinstance(answer, SpaceRejected)
    assert "keeps the results of experiment 'throughput-v1' of actuator 'synthetic'" in (
        answer.reason
    )
