"""Routing a pair to the pool whose actuators offer the experiment (and fit the GPU model)."""

from __future__ import annotations

from collections import Counter

from discospace.core import Entity, ExperimentRef
from discospace.core.experiment import measured_as
from discospace.sampler.routing import PoolDirectory, Unroutable

BENCH = ExperimentRef(actuator="synthetic", experiment="bench")


def _entity(**values):
    return Entity.of(values)


def _directory(make, *pools):
    directory = PoolDirectory()
    for event in pools:
        directory.record(event)
    return directory


def test_a_pair_goes_to_the_pool_that_offers_its_experiment(make):
    directory = _directory(make, make.pool("cpu", None, make.profile), make.pool("gpu"))
    entity = _entity(batch_size=4)

    assert directory.route(BENCH, entity) == "gpu"


def test_an_entity_goes_to_a_pool_of_its_gpu_model(make):
    directory = _directory(make, make.pool("a100", "A100"), make.pool("h100", "H100"))

    for model in ("A100", "H100"):
        for batch in (1, 2, 4, 8, 16):
            entity = _entity(batch_size=batch, gpu_model=model)
            assert directory.route(BENCH, entity) == model.lower()


def test_a_pool_without_a_gpu_model_serves_entities_of_any_model(make):
    directory = _directory(make, make.pool("a100", "A100"), make.pool("anything"))
    entity = _entity(batch_size=4, gpu_model="L40S")

    assert directory.route(BENCH, entity) == "anything"


def test_an_experiment_no_pool_offers_is_unroutable_with_the_reason(make):
    directory = _directory(make, make.pool("cpu", None, make.profile))
    entity = _entity(batch_size=4)

    route = directory.route(BENCH, entity)

    assert route == Unroutable("no pool offers experiment 'bench' of actuator 'synthetic'")


def test_an_entity_whose_gpu_model_no_pool_carries_is_unroutable_naming_the_model(make):
    directory = _directory(make, make.pool("a100", "A100"))
    entity = _entity(batch_size=4, gpu_model="H100")

    route = directory.route(BENCH, entity)

    assert isinstance(route, Unroutable)
    assert "GPU model 'H100'" in route.reason
    assert "a100" in route.reason


def test_entities_spread_over_pools_that_fit_and_each_always_goes_to_the_same_one(make):
    directory = _directory(make, make.pool("p1"), make.pool("p2"), make.pool("p3"))
    entities = [_entity(batch_size=b) for b in range(60)]

    first = [directory.route(BENCH, entity) for entity in entities]
    again = [directory.route(BENCH, entity) for entity in entities]

    assert first == again
    assert set(Counter(first)) == {"p1", "p2", "p3"}
    assert min(Counter(first).values()) >= 10


def test_the_latest_announcement_of_a_pool_sets_its_gpu_model(make):
    directory = _directory(make, make.pool("p", "A100"), make.pool("p", "H100"))
    entity = _entity(batch_size=4, gpu_model="H100")

    assert directory.route(BENCH, entity) == "p"


def test_a_pool_whose_latest_catalog_drops_an_experiment_is_no_longer_sent_it(make):
    directory = _directory(
        make, make.pool("old"), make.pool("new"), make.pool("old", None, make.profile)
    )
    entities = [_entity(batch_size=b) for b in range(20)]

    assert {directory.route(BENCH, entity) for entity in entities} == {"new"}
    directory.record(make.pool("new", None, make.profile))
    assert directory.route(BENCH, entities[0]) == Unroutable(
        "no pool offers experiment 'bench' of actuator 'synthetic'"
    )


def test_a_pools_gpu_model_is_the_actuators_own_whatever_order_announcements_are_read(make):
    """Two actuators of one pool announce on their own keys (partitions): the pool's model was
    the latest announcement read, so an entity of another model was refused in one order and
    sent to the pool (filed under a model its machines do not carry) in the other."""
    from discospace.core import ExperimentSpec
    from discospace.events import ActuatorRegistered

    train = ExperimentSpec(actuator="gpu_train", experiment="train", target_properties=("t",))
    gpu_train = ActuatorRegistered.model_validate(
        {**make.pool("h100", "H100").model_dump(), "actuator": "gpu_train", "experiments": [train]}
    )
    other = make.pool("h100", None)  # `synthetic` on the same machines, without a model
    entity = _entity(batch_size=4, gpu_model="L40S")
    ref = ExperimentRef(actuator="gpu_train", experiment="train")

    routes = [
        _directory(make, *announced).route(ref, entity)
        for announced in ((gpu_train, other), (other, gpu_train))
    ]

    assert routes[0] == routes[1]
    assert isinstance(routes[0], Unroutable)
    assert _directory(make, other, gpu_train).route(BENCH, entity) == "h100"


def test_a_pool_that_defines_the_experiment_otherwise_than_the_space_is_not_sent_it(make):
    """A rolling upgrade: the registry calls two definitions a conflict for new spaces, but an
    existing space was routed by name, to a pool whose workers refused its pairs for good (an
    option gone) or measured other targets under the space's experiment id."""
    from discospace.core import Experiment

    registered = make.pool("old").experiments[0]
    upgraded = registered.model_copy(update={"target_properties": ("energy",)})
    directory = _directory(make, make.pool("old"), make.pool("new", None, upgraded))
    entities = [_entity(batch_size=b) for b in range(20)]
    definition = measured_as(Experiment.from_spec(registered))

    assert {directory.route(BENCH, entity, definition) for entity in entities} == {"old"}
    directory.record(make.pool("old", None, upgraded))
    refused = directory.route(BENCH, entities[0], definition)
    assert isinstance(refused, Unroutable)
    assert refused.reason.startswith(
        "pools new, old offer experiment 'bench' of actuator 'synthetic' defined otherwise than "
        "when the space was registered"
    )
    assert {directory.route(BENCH, entity) for entity in entities} == {"new", "old"}  # by name


def test_a_pool_measuring_the_same_under_a_reworded_definition_is_sent_it_not_one_of_other_kind(
    make,
):
    """A new description, or properties listed in another order, measure the same: such a pool
    was refused an existing space's pairs for good (a resubmitted spec keeps its old
    registration). An option whose default became `true` where it was 1 is another experiment
    (Python has True == 1): its workers refused the pairs."""
    from discospace.core import Experiment, ExperimentSpec

    registered = ExperimentSpec(
        actuator="synthetic",
        experiment="bench",
        target_properties=("throughput", "memory"),
        required_properties=("batch_size", "model"),
        optional_properties={"warm": 1},
        description="one benchmark run",
    )
    reworded = registered.model_copy(
        update={
            "description": "a benchmark run, timed",
            "target_properties": ("memory", "throughput"),
            "required_properties": ("model", "batch_size"),
        }
    )
    boolean = registered.model_copy(update={"optional_properties": {"warm": True}})
    entity = _entity(batch_size=4)
    definition = measured_as(Experiment.from_spec(registered))

    assert _directory(make, make.pool("p", None, reworded)).route(BENCH, entity, definition) == "p"
    refused = _directory(make, make.pool("p", None, boolean)).route(BENCH, entity, definition)
    assert isinstance(refused, Unroutable)


def test_a_pool_that_changed_only_a_default_the_space_sets_measures_what_it_did(make):
    """The space measures `bench` with steps 5: a pool redeployed with another default of
    steps measures exactly that, and was refused its pairs for good; one with another default
    of an option the space leaves to its default measures something else."""
    from discospace.core import Experiment, ExperimentSpec
    from discospace.core.spec import ExperimentRef

    def bench(**options: int) -> ExperimentSpec:
        return ExperimentSpec(
            actuator="synthetic",
            experiment="bench",
            target_properties=("throughput",),
            required_properties=("batch_size",),
            optional_properties=options,
        )

    pinned = ExperimentRef(actuator="synthetic", experiment="bench", parameterization={"steps": 5})
    registered = measured_as(Experiment.from_spec(bench(steps=10, warm=1)), {"steps": 5})
    entity = _entity(batch_size=4)
    moved = _directory(make, make.pool("p", None, bench(steps=20, warm=1)))
    assert moved.route(pinned, entity, registered) == "p"
    other = _directory(make, make.pool("p", None, bench(steps=10, warm=2)))
    assert isinstance(other.route(pinned, entity, registered), Unroutable)
    gone = _directory(make, make.pool("p", None, bench(warm=1)))  # no steps option at all
    assert isinstance(gone.route(pinned, entity, registered), Unroutable)
    given = _directory(make, make.pool("p", None, bench(steps=20, warm=1)))  # the entity's steps
    explored = measured_as(
        Experiment.from_spec(bench(steps=10, warm=1)), {}, ("batch_size", "steps")
    )
    assert given.route(BENCH, entity, explored, ("batch_size", "steps")) == "p"
    assert isinstance(given.route(BENCH, entity, explored, ("batch_size",)), Unroutable)
    now_default = _directory(make, make.pool("p", None, bench(steps=5, warm=1)))
    refused = now_default.route(pinned, entity, registered)  # its workers file it as 'bench'
    assert isinstance(refused, Unroutable)
    assert "defined otherwise than when the space was registered" in refused.reason
