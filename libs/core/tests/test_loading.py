import json
import math
from pathlib import Path

import pytest

from discospace.core import (
    DomainError,
    ExperimentRef,
    SpecError,
    load_discovery_space,
    load_experiment_specs,
    load_space_spec,
    parse_space_spec,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_seed_space_file_loads_exactly_as_written(seed_space_file: Path) -> None:
    spec = load_space_spec(seed_space_file)
    assert spec.sample_store == "2351e8"
    assert [p.name for p in spec.entity_space] == [
        "dataset_id",
        "model_name",
        "torch_dtype",
        "gpu_model",
        "number_gpus",
        "model_max_length",
        "batch_size",
    ]
    assert spec.entity_space[6].values == (1, 2, 4, 8, 16, 32, 64, 128)
    assert spec.measurement_space == (
        ExperimentRef(
            actuator="SFTTrainer", experiment="finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0"
        ),
    )


def test_a_json_file_gives_the_same_space_as_its_yaml(seed_space_file: Path, tmp_path) -> None:
    spec = load_space_spec(seed_space_file)
    as_json = write(tmp_path, "space.json", json.dumps(spec.model_dump(exclude_none=True)))
    assert load_discovery_space(as_json).id == load_discovery_space(seed_space_file).id


def test_every_optional_field_is_accepted(tmp_path) -> None:
    text = """
sample_store: s
entity_space:
  - name: lr
    range: [1e-5, 1e-3]
    type: continuous
    probability: {name: normal, mean: 1e-4, std: 5e-5}
  - {name: steps, range: [0, 100], interval: 10}
  - {name: run, type: identifier}
measurement_space:
  - {actuator: A, experiment: e, parameterization: {lora_r: 8}}
"""
    space = load_discovery_space(write(tmp_path, "s.yaml", text))
    assert space.entity_space.get_property("lr").domain.low == 1e-5
    assert space.entity_space.get_property("steps").domain.size == 10
    assert space.experiments[0].parameterization == {"lora_r": 8}


def test_yaml_exponent_numbers_are_numbers() -> None:
    spec = parse_space_spec(
        "sample_store: s\nentity_space: [{name: lr, values: [1e-3, 1E-4]}]\nmeasurement_space: []"
    )
    assert spec.entity_space[0].values == (0.001, 0.0001)


def _values(yaml_values: str) -> tuple[object, ...]:
    text = f"sample_store: s\nentity_space: [{{name: a, values: {yaml_values}}}]\n"
    return parse_space_spec(text + "measurement_space: []").entity_space[0].values


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("[yes, no]", ("yes", "no")),  # YAML 1.1: True, False
        ("[auto, on, off, y, n]", ("auto", "on", "off", "y", "n")),  # 1.1: mixed types
        ("[true, false, True, FALSE]", (True, False, True, False)),
        ("[010, 020, 08]", (10, 20, 8)),  # 1.1: 8, 16 and the text '08'
        ("[1:30, 12:00:00]", ("1:30", "12:00:00")),  # 1.1: 90 and 43200 (base 60)
        ("[2024-01-01]", ("2024-01-01",)),  # 1.1: a date, refused
        ("[0x1F, 0o17, 1_000, 0b101]", (31, 15, 1000, "0b101")),
        ("[1e-3, .5, -2.5E2, 1.]", (0.001, 0.5, -250.0, 1.0)),
        ("[<, =, <<, '>']", ("<", "=", "<<", ">")),  # 1.1's value and merge tags: refused
    ],
)
def test_yaml_scalars_are_read_as_yaml_1_2_reads_them(written: str, read: tuple) -> None:
    """As a JSON user writes them: `no` is not false, `010` is ten."""
    values = _values(written)
    assert values == read
    assert [type(v) for v in values] == [type(v) for v in read]


def test_a_space_written_with_yes_and_no_is_the_space_written_in_json(tmp_path) -> None:
    yaml_text = """
sample_store: s
entity_space: [{name: flash_attention, values: [yes, no]}, {name: gpus, values: [01, 02]}]
measurement_space: [{actuator: A, experiment: e}]
"""
    as_json = {
        "sample_store": "s",
        "entity_space": [
            {"name": "flash_attention", "values": ["yes", "no"]},
            {"name": "gpus", "values": [1, 2]},
        ],
        "measurement_space": [{"actuator": "A", "experiment": "e"}],
    }
    from_yaml = load_discovery_space(write(tmp_path, "s.yaml", yaml_text))
    from_json = load_discovery_space(write(tmp_path, "s.json", json.dumps(as_json)))
    assert from_yaml.id == from_json.id
    assert [e.id for e in from_yaml.entity_space.sequential()] == [
        e.id for e in from_json.entity_space.sequential()
    ]


def test_yaml_merge_keys_are_read() -> None:
    text = """
sample_store: s
entity_space:
  - &gpus {name: number_gpus, values: [1, 2]}
  - {<<: *gpus, name: nodes}
measurement_space: []
"""
    spec = parse_space_spec(text)
    assert [(p.name, p.values) for p in spec.entity_space] == [
        ("number_gpus", (1, 2)),
        ("nodes", (1, 2)),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "sample_store: 2351e8\nentity_space: []\nmeasurement_space: []",
            "f.yaml: sample_store: should be text, not the number 235100000000.0 "
            "(quote it to keep it as written)",
        ),
        (
            "sample_store: s\nentity_space: [{name: a, range: [0, .inf]}]\nmeasurement_space: []",
            "f.yaml: entity_space[0] (property 'a'): range[1]: should be a finite number",
        ),
        (
            "sample_store: s\nentity_space: []\n"
            "measurement_space: [{actuator: A, experiment: e, parameterization: {eta: .nan}}]",
            "f.yaml: measurement_space[0] (experiment 'e'): parameterization.eta: "
            "should be a finite number",
        ),
        (
            "sample_store: s\nentity_space: [{1: a, true: b}]\nmeasurement_space: []",
            "f.yaml: line 2: key 'True' is given twice",
        ),
        (
            "sample_store: s\nentity_space: [{name: a, valuez: [1]}]\nmeasurement_space: []",
            "f.yaml: entity_space[0] (property 'a'): valuez: is not a known field",
        ),
        (
            "sample_store: s\nentity_space: [{name: a, values: [1, [2]]}]\nmeasurement_space: []",
            "f.yaml: entity_space[0] (property 'a'): values[1]: "
            "should be a string, a number or a boolean",
        ),
        (
            "sample_store: s\nentity_space: [{name: a, range: [0, x]}]\nmeasurement_space: []",
            "f.yaml: entity_space[0] (property 'a'): range[1]: should be a number",
        ),
        (
            "sample_store: s\nentity_space: []\nmeasurement_space: [{actuator: A}]",
            "f.yaml: measurement_space[0]: experiment: is required",
        ),
        ("entity_space: []\nmeasurement_space: []", "f.yaml: sample_store: is required"),
        ("- a", "f.yaml: the document: should be a mapping of fields"),
        (
            "sample_store: s\nentity_space: [{name: a, values: abc}]\nmeasurement_space: []",
            "f.yaml: entity_space[0] (property 'a'): values: should be a list",
        ),
        (
            "sample_store: s\nentity_space: 5\nmeasurement_space: []",
            "f.yaml: entity_space: should be a list",
        ),
        ("a: [", "f.yaml: line"),
        (  # the reader refused it as it was built, outside the error handling: a traceback
            "sample_store: s\nentity_space: [{name: a, values: [x\x1by]}]\nmeasurement_space: []",
            "f.yaml: line 2: the control character U+001B is not allowed in YAML",
        ),
        (  # lines as YAML counts them: a lone CR ends one too
            "sample_store: s\rentity_space: []\rmeasurement_space: [x\x1by]",
            "f.yaml: line 3: the control character U+001B is not allowed in YAML",
        ),
    ],
)
def test_a_bad_file_gives_one_sentence_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_space_spec(text, "f.yaml")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_an_ill_formed_domain_in_a_file_names_the_file_and_property(tmp_path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        "sample_store: s\nentity_space: [{name: a, range: [5, 1]}]\nmeasurement_space: []",
    )
    with pytest.raises(DomainError, match=r"s\.yaml: property 'a' has a range whose low \(5\)"):
        load_discovery_space(path)


def test_a_batch_size_range_without_an_interval_is_refused_not_drawn_as_283_41(tmp_path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        "sample_store: s\nentity_space: [{name: batch_size, range: [8, 512]}]\n"
        "measurement_space: []",
    )
    with pytest.raises(DomainError, match=r"s\.yaml: property 'batch_size' has a range of whole"):
        load_discovery_space(path)


def test_a_range_written_with_real_numbers_in_a_file_is_continuous(tmp_path) -> None:
    text = "sample_store: s\nentity_space: [{name: lr, range: [0.0, 1.0]}]\nmeasurement_space: []"
    space = load_discovery_space(write(tmp_path, "s.yaml", text))
    assert space.entity_space.get_property("lr").domain.kind == "continuous"


@pytest.mark.parametrize(
    "example", sorted(REPO_ROOT.glob("examples/**/*-space.yaml")), ids=lambda path: path.name
)
def test_every_example_space_file_loads(example: Path) -> None:
    assert load_discovery_space(example).id.startswith("space-")


def test_a_missing_file_is_one_sentence(tmp_path) -> None:
    with pytest.raises(SpecError, match="no such file"):
        load_space_spec(tmp_path / "absent.yaml")


def test_a_bad_json_file_names_the_line(tmp_path) -> None:
    with pytest.raises(SpecError, match=r"s\.json: line 2"):
        load_space_spec(write(tmp_path, "s.json", '{\n"a": }'))


def test_a_catalog_file_loads_a_list_of_experiments(tmp_path) -> None:
    text = """
- actuator: SFTTrainer
  experiment: finetune
  target_properties: [train_tokens_per_second]
  required_properties: [model_name, batch_size]
  optional_properties: {lora_r: 4}
- actuator: Costing
  experiment: cost
  target_properties: [dollars]
  required_properties: [finetune.train_tokens_per_second]
"""
    specs = load_experiment_specs(write(tmp_path, "catalog.yaml", text))
    assert [s.experiment for s in specs] == ["finetune", "cost"]
    with pytest.raises(SpecError, match=r"\[0\].*target_properties: is required"):
        load_experiment_specs(write(tmp_path, "bad.yaml", "- {actuator: A, experiment: e}"))


def test_a_catalog_file_that_gives_an_experiment_twice_is_refused(tmp_path) -> None:
    entry = "- {actuator: A, experiment: e, target_properties: [%s]}\n"
    other = "- {actuator: B, experiment: e, target_properties: [t]}\n"
    path = write(tmp_path, "twice.yaml", entry % "t" + other + entry % "u")

    with pytest.raises(SpecError) as refused:
        load_experiment_specs(path)

    assert str(refused.value) == (
        f"{path}: experiment 'e' of actuator 'A' is given twice (items 1 and 3); "
        "give each experiment once"
    )


def test_an_experiment_the_catalog_refuses_is_refused_naming_the_file_and_item(tmp_path) -> None:
    good = "- {actuator: A, experiment: e, target_properties: [t]}\n"
    path = write(
        tmp_path, "c.yaml", good + "- {actuator: A, experiment: f, target_properties: [t, x, t]}\n"
    )

    with pytest.raises(SpecError) as refused:
        load_experiment_specs(path)

    assert str(refused.value) == f"{path}: item 2: experiment 'f' declares t more than once"


@pytest.mark.parametrize(
    "text",
    [
        "7",
        "007",
        "+7",
        "-0",
        "7.50",
        "1e3",
        "1E-05",
        ".5",
        "1_000",
        "0x1F",
        "0o17",
        "true",
        "FALSE",
        "yes",
        "1:30",
        "2024-01-01",
        "llama-7b",
        ".inf",
        ".nan",
        "1" * 25,
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "0x1" + "0" * 16,
        "0x" + "F" * 200,
        "0o" + "7" * 22,
        "0" * 30 + "7",
        "0" * 4400 + "7",
    ],
)
def test_a_plain_scalar_is_what_a_space_file_reads_unquoted(text: str) -> None:
    """Cells of a table name the entities a space file names (`store import`)."""
    from discospace.core.loading import parse_document, plain_scalar

    try:
        read = parse_document(f"value: {text}", "cell.yaml")["value"]
    except SpecError:  # a whole number beyond 64 bits, which a space file refuses
        read = text
    expected = text if isinstance(read, float) and not math.isfinite(read) else read
    assert plain_scalar(text) == expected
    assert type(plain_scalar(text)) is type(expected)
