import re

from hypothesis import given
from hypothesis import strategies as st

from discospace.core import Entity, EntitySpace, PropertySpec, entity_id, entity_label

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
values = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(max_size=20),
    st.booleans(),
)
points = st.dictionaries(names, values, min_size=1, max_size=8)


@given(points, st.randoms(use_true_random=False))
def test_an_entity_id_does_not_change_with_property_order(point: dict, rng) -> None:
    items = list(point.items())
    rng.shuffle(items)
    assert entity_id(dict(items)) == entity_id(point)
    assert entity_label(dict(items)) == entity_label(point)


@given(points, st.integers(-(10**15), 10**15))
def test_a_whole_float_and_its_int_give_one_id(point: dict, number: int) -> None:
    as_int, as_float = {**point, "n": number}, {**point, "n": float(number)}
    if float(number) == number:
        assert entity_id(as_int) == entity_id(as_float)
        assert Entity.of(as_int) == Entity.of(as_float)


@given(points, points)
def test_different_points_have_different_ids(a: dict, b: dict) -> None:
    if Entity.of(a) != Entity.of(b):
        assert entity_id(a) != entity_id(b)


def test_a_numeric_string_is_one_entity_with_its_number_inside_a_numeric_domain() -> None:
    space = EntitySpace.from_specs(
        [PropertySpec(name="gpus", values=[2, 4]), PropertySpec(name="model", values=["x"])]
    )
    ids = {space.normalise({"gpus": g, "model": "x"}).id for g in (4, 4.0, "4", " 4 ")}
    assert len(ids) == 1


def test_the_same_configuration_has_one_id_in_every_space() -> None:
    small = EntitySpace.from_specs(
        [PropertySpec(name="b", values=[16]), PropertySpec(name="a", values=["x"])]
    )
    large = EntitySpace.from_specs(
        [PropertySpec(name="a", values=["x", "y"]), PropertySpec(name="b", range=[0.0, 64.0])]
    )
    assert small.entity_at(0).id == large.normalise({"a": "x", "b": 16.0}).id


def test_the_readable_form_orders_properties_by_name() -> None:
    point = {"gpu_model": "NVIDIA-A100-80GB-PCIe", "batch_size": 16, "is_lora": True}
    assert entity_label(point) == "batch_size.16-gpu_model.NVIDIA-A100-80GB-PCIe-is_lora.true"


def test_an_entity_id_is_sixteen_hex_digits_of_the_canonical_json() -> None:
    # SHA-256 of '{"a":1,"b":"x"}' starts with these digits (computed independently).
    import hashlib

    expected = hashlib.sha256(b'{"a":1,"b":"x"}').hexdigest()[:16]
    assert entity_id({"b": "x", "a": 1.0}) == expected
    assert re.fullmatch(r"[0-9a-f]{16}", expected)


def test_booleans_and_numbers_are_different_values() -> None:
    assert entity_id({"a": True}) != entity_id({"a": 1})
    assert Entity.of({"a": True}) != Entity.of({"a": 1})


def test_an_entity_reads_like_a_mapping() -> None:
    entity = Entity.of({"b": 2, "a": "x"})
    assert list(entity) == ["a", "b"]
    assert entity["b"] == 2
    assert entity == {"a": "x", "b": 2}
