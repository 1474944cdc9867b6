import pytest

from discospace.core import (
    EntitySpace,
    Experiment,
    ExperimentCatalog,
    ExperimentError,
    ExperimentRef,
    ExperimentSpec,
    MeasurementSpace,
    MeasurementSpaceError,
    PropertySpec,
    observed_property_id,
    parameterized_experiment_id,
    split_observed_property_id,
)

FINETUNE = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune-lora-v1.2.0",
    target_properties=["train_tokens_per_second", "peak_gpu_memory"],
    required_properties=["model_name", "batch_size"],
    optional_properties={"lora_r": 4, "precision": "bf16"},
)
COST = ExperimentSpec(
    actuator="Costing",
    experiment="cost",
    target_properties=["dollars_per_token"],
    required_properties=["gpu_model", "finetune-lora-v1.2.0.train_tokens_per_second"],
)


def entity_space(*names: str) -> EntitySpace:
    return EntitySpace.from_specs([PropertySpec(name=n, values=[1]) for n in names])


def test_an_unparameterized_experiment_keeps_its_id() -> None:
    assert Experiment.from_spec(FINETUNE).parameterize().id == "finetune-lora-v1.2.0"


def test_a_parameterization_gives_a_distinct_id_with_sorted_normalised_pairs() -> None:
    experiment = Experiment.from_spec(FINETUNE).parameterize({"precision": "fp32", "lora_r": 8.0})
    assert experiment.id == "finetune-lora-v1.2.0-lora_r.8-precision.fp32"
    assert experiment.option_values == {"lora_r": 8, "precision": "fp32"}
    assert parameterized_experiment_id("e", {"b": 2, "a": True}) == "e-a.true-b.2"


def test_a_parameterization_equal_to_the_defaults_is_the_same_experiment() -> None:
    experiment = Experiment.from_spec(FINETUNE)
    assert experiment.parameterize({"lora_r": 4}).id == experiment.parameterize().id


def test_a_parameterization_of_an_unknown_or_mistyped_option_is_refused() -> None:
    experiment = Experiment.from_spec(FINETUNE)
    with pytest.raises(ExperimentError, match="has no optional property 'alpha'"):
        experiment.parameterize({"alpha": 1})
    mistyped = r"""expects a number for 'lora_r' \(default 4\), not the text "high"$"""
    with pytest.raises(ExperimentError, match=mistyped):
        experiment.parameterize({"lora_r": "high"})


def test_a_number_given_for_an_option_whose_default_is_text_names_both_kinds() -> None:
    """A default written quoted in a catalog ("8") refused the number 8 with "expects a value
    like 8 for 'steps', not 8": a sentence that contradicts itself."""
    experiment = Experiment.from_spec(
        FINETUNE.model_copy(update={"optional_properties": {"steps": "8"}})
    )
    sentence = r"""expects text for 'steps' \(default "8"\), not the number 8$"""
    with pytest.raises(ExperimentError, match=sentence):
        experiment.parameterize({"steps": 8})


def test_a_value_that_would_make_the_id_read_as_another_parameterization_is_refused() -> None:
    """`precision: bf16-lora_r.8` would give the id of `precision: bf16, lora_r: 8`: the store
    would hand one's results to the other."""
    experiment = Experiment.from_spec(FINETUNE)
    with pytest.raises(ExperimentError, match=r"'-lora_r\.' names the option 'lora_r'"):
        experiment.parameterize({"precision": "bf16-lora_r.8"})
    assert experiment.parameterize({"precision": "bf16-x.8"}).id == (
        "finetune-lora-v1.2.0-precision.bf16-x.8"
    )


def test_an_option_name_holding_a_dot_is_refused() -> None:
    """Options `a` and `a.b` would give `{a: b.1}` and `{a.b: 1}` one id, `e-a.b.1`."""
    with pytest.raises(ExperimentError, match=r"has the option 'a\.b': options are non-empty"):
        Experiment.from_spec(FINETUNE.model_copy(update={"optional_properties": {"a.b": 1}}))


def test_observed_property_ids_join_the_parameterized_id_and_the_target() -> None:
    experiment = Experiment.from_spec(FINETUNE).parameterize({"lora_r": 8})
    assert experiment.observed_property_ids == (
        "finetune-lora-v1.2.0-lora_r.8.train_tokens_per_second",
        "finetune-lora-v1.2.0-lora_r.8.peak_gpu_memory",
    )
    assert split_observed_property_id(observed_property_id("a-v1.2", "t")) == ("a-v1.2", "t")


def test_an_experiment_requiring_an_observed_property_is_dependent() -> None:
    cost = Experiment.from_spec(COST).parameterize()
    assert cost.is_dependent
    assert cost.depends_on == {"finetune-lora-v1.2.0"}
    assert cost.required_constitutive == ("gpu_model",)
    assert not Experiment.from_spec(FINETUNE).parameterize().is_dependent


def test_an_experiment_must_declare_targets_once() -> None:
    with pytest.raises(ExperimentError, match="declares no target"):
        Experiment("a", "e", ())
    with pytest.raises(ExperimentError, match="declares x more than once"):
        Experiment("a", "e", ("x",), ("x",))
    with pytest.raises(ExperimentError, match=r"targets are non-empty, without '\.'"):
        Experiment("a", "e", ("x.y",))


def test_a_consistent_measurement_space_has_nothing_missing() -> None:
    catalog = ExperimentCatalog([FINETUNE, COST])
    space = MeasurementSpace.from_refs(
        [
            ExperimentRef(actuator="SFTTrainer", experiment="finetune-lora-v1.2.0"),
            ExperimentRef(actuator="Costing", experiment="cost"),
        ],
        catalog,
    )
    assert space.missing(entity_space("model_name", "batch_size", "gpu_model")) == []
    assert [e.id for e in space.independent] == ["finetune-lora-v1.2.0"]


def test_a_parameterization_the_entity_space_overrides_is_refused() -> None:
    """Each entity's own lora_r is what a worker measures, stored under the id that says 8."""
    lora = ExperimentRef(
        actuator="SFTTrainer", experiment="finetune-lora-v1.2.0", parameterization={"lora_r": 8}
    )
    space = MeasurementSpace.from_refs([lora], ExperimentCatalog([FINETUNE]))

    assert space.missing(entity_space("model_name", "batch_size", "lora_r")) == [
        "experiment 'finetune-lora-v1.2.0-lora_r.8' is parameterized with lora_r=8, which the "
        "entity space also gives: each entity's own lora_r would be measured under that id; "
        "drop one of them"
    ]
    assert space.missing(entity_space("model_name", "batch_size")) == []


def test_an_optional_property_the_entity_space_gives_is_not_a_parameterization() -> None:
    plain = ExperimentRef(actuator="SFTTrainer", experiment="finetune-lora-v1.2.0")
    space = MeasurementSpace.from_refs([plain], ExperimentCatalog([FINETUNE]))

    assert space.missing(entity_space("model_name", "batch_size", "lora_r")) == []


def test_the_consistency_check_lists_everything_missing() -> None:
    catalog = ExperimentCatalog([FINETUNE, COST])
    space = MeasurementSpace.from_refs(
        [
            ExperimentRef(
                actuator="SFTTrainer",
                experiment="finetune-lora-v1.2.0",
                parameterization={"lora_r": 8},
            ),
            ExperimentRef(actuator="Costing", experiment="cost"),
        ],
        catalog,
    )
    with pytest.raises(MeasurementSpaceError) as caught:
        space.check_consistent(entity_space("model_name"))
    message = str(caught.value)
    assert "requires property 'batch_size'" in message
    assert "requires property 'gpu_model'" in message
    assert "observed property 'finetune-lora-v1.2.0.train_tokens_per_second'" in message
    assert len(space.missing(entity_space("model_name"))) == 3


def test_experiments_that_need_each_others_results_are_refused_as_a_cycle() -> None:
    """Each provided what the other required, so nothing was missing and the registry
    registered a space on which no measurement could ever run."""
    catalog = ExperimentCatalog(
        [
            ExperimentSpec(actuator="A", experiment="x", target_properties=["tps"],
                           required_properties=["bs", "y.mem"]),
            ExperimentSpec(actuator="A", experiment="y", target_properties=["mem"],
                           required_properties=["bs", "x.tps"]),
        ]
    )  # fmt: skip
    refs = [ExperimentRef(actuator="A", experiment=name) for name in ("x", "y")]
    space = MeasurementSpace.from_refs(refs, catalog)
    assert space.missing(entity_space("bs")) == [
        "experiments 'x', 'y' depend on each other in a cycle"
    ]
    with pytest.raises(MeasurementSpaceError, match="depend on each other in a cycle"):
        space.check_consistent(entity_space("bs"))


def test_a_cycle_names_its_own_experiments_and_those_waiting_on_it_apart() -> None:
    """`z` only reads `x`: it was named among the experiments of the cycle."""
    catalog = ExperimentCatalog(
        [
            ExperimentSpec(actuator="A", experiment="x", target_properties=["tps"],
                           required_properties=["bs", "y.mem"]),
            ExperimentSpec(actuator="A", experiment="y", target_properties=["mem"],
                           required_properties=["bs", "x.tps"]),
            ExperimentSpec(actuator="A", experiment="z", target_properties=["j"],
                           required_properties=["bs", "x.tps"]),
            ExperimentSpec(actuator="A", experiment="free", target_properties=["k"],
                           required_properties=["bs"]),
        ]
    )  # fmt: skip
    refs = [ExperimentRef(actuator="A", experiment=name) for name in ("x", "y", "z", "free")]

    assert MeasurementSpace.from_refs(refs, catalog).missing(entity_space("bs")) == [
        "experiments 'x', 'y' depend on each other in a cycle ('z' depends on it)"
    ]


def test_unknown_experiments_are_all_named() -> None:
    with pytest.raises(MeasurementSpaceError, match=r"'x' of actuator 'A'.*'y' of actuator 'B'"):
        MeasurementSpace.from_refs(
            [
                ExperimentRef(actuator="A", experiment="x"),
                ExperimentRef(actuator="B", experiment="y"),
            ],
            ExperimentCatalog([FINETUNE]),
        )


def test_an_experiment_round_trips_through_its_spec() -> None:
    assert Experiment.from_spec(FINETUNE).to_spec() == FINETUNE
