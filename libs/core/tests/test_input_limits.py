"""Input files are refused at the door: depth, duplicate keys, size, values, identifiers,
integers, each with one sentence (a SpecError), never a traceback."""

import json
from pathlib import Path

import pytest

from discospace.core import SpecError, load_space_spec
from discospace.core.loading import InputLimits, parse_document, read_document

SPACE = """sample_store: s
entity_space:
  - {name: x, values: [1, 2]}
measurement_space:
  - {actuator: a, experiment: e}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["deep.yaml", "deep.json"])
def test_a_deeply_nested_file_is_refused_with_one_sentence(tmp_path, name) -> None:
    text = "[" * 5000 + "]" * 5000
    with pytest.raises(SpecError, match="nested more than 64 levels") as error:
        load_space_spec(write(tmp_path, name, text))
    assert "\n" not in str(error.value)


def test_deep_block_mappings_are_refused_too() -> None:
    text = "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n"
    with pytest.raises(SpecError, match="nested more than"):
        parse_document(text, "f.yaml")


def test_a_duplicate_key_is_refused_naming_the_key_and_line() -> None:
    text = SPACE + "sample_store: t\n"
    with pytest.raises(SpecError, match=r"f.yaml: line 6: key 'sample_store' is given twice"):
        parse_document(text, "f.yaml")


@pytest.mark.parametrize(
    ("tagged", "sentence"),
    [
        ("!!int 1:30", "'1:30' cannot be read as !!int"),
        ("!!int 5s", "'5s' cannot be read as !!int"),
        ("!!bool maybe", "'maybe' cannot be read as !!bool"),
        ("!!float abc", "'abc' cannot be read as !!float"),
        ("!!timestamp 2024-13-45", "'2024-13-45' cannot be read as !!timestamp"),
        ("!!timestamp hello", "'hello' cannot be read as !!timestamp"),  # AttributeError
        ('!!float ""', "'' cannot be read as !!float"),  # IndexError
        ("!!float _", "'_' cannot be read as !!float"),
    ],
)
def test_a_tagged_value_its_tag_cannot_read_is_one_sentence_naming_its_line(
    tagged: str, sentence: str
) -> None:
    """The tag's constructor raised a `ValueError` or `KeyError`: a traceback of 80 lines."""
    text = SPACE.replace("values: [1, 2]", f"values: [{tagged}]")
    with pytest.raises(SpecError, match=rf"^f.yaml: line 3: {sentence}$"):
        parse_document(text, "f.yaml")


def test_a_duplicate_json_key_is_refused() -> None:
    with pytest.raises(SpecError, match="key 'a' is given twice"):
        parse_document('{"a": 1, "a": 2}', "f.json")


def test_a_file_over_the_size_limit_is_refused_before_parsing(tmp_path) -> None:
    path = write(tmp_path, "big.yaml", SPACE + "#" * (1 << 20))
    with pytest.raises(SpecError, match=r"big.yaml: .* over the limit of 1048576 bytes"):
        read_document(path)


def test_too_many_values_are_refused() -> None:
    text = json.dumps({"v": list(range(50))})
    with pytest.raises(SpecError, match="more than 40 values"):
        parse_document(text, "f.json", limits=InputLimits(max_values=40))
    with pytest.raises(SpecError, match="more than 40 values"):
        parse_document(text, "f.yaml", limits=InputLimits(max_values=40))


def test_alias_expansion_counts_as_values() -> None:
    text = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n" + "".join(
        f"b{i}: &b{i} [*{'a' if i == 0 else f'b{i - 1}'}, *{'a' if i == 0 else f'b{i - 1}'}]\n"
        for i in range(30)
    )
    with pytest.raises(SpecError, match="values"):
        parse_document(text, "f.yaml")


def test_a_long_identifier_is_refused(tmp_path) -> None:
    text = SPACE.replace("sample_store: s", "sample_store: " + "s" * 20000)
    with pytest.raises(SpecError, match=r"sample_store is 20000 characters long, over the limit"):
        load_space_spec(write(tmp_path, "space.yaml", text))


def test_a_long_property_name_is_refused() -> None:
    text = SPACE.replace("name: x", "name: " + "x" * 300)
    with pytest.raises(SpecError, match=r"name is 300 characters long"):
        parse_document(text, "f.yaml")


@pytest.mark.parametrize("name", ["f.yaml", "f.json"])
@pytest.mark.parametrize("digits", [400, 5000])
def test_huge_integers_are_refused(name, digits) -> None:
    text = json.dumps({"v": None}).replace("null", "9" * digits)
    with pytest.raises(SpecError, match=r"integer .* is too large"):
        parse_document(text, name)


@pytest.mark.parametrize("name", ["f.yaml", "f.json"])
def test_the_64_bit_integers_are_taken_to_both_ends_and_not_beyond(name) -> None:
    """-2^63 is a 64-bit integer as 2^63 - 1 is (an entity value, an event field, a column)."""
    ends = parse_document('{"v": [-9223372036854775808, 9223372036854775807]}', name)
    assert ends["v"] == [-(2**63), 2**63 - 1]
    for beyond in ("-9223372036854775809", "9223372036854775808"):
        with pytest.raises(SpecError, match=r"integer .* is too large"):
            parse_document(f'{{"v": {beyond}}}', name)


def test_ordinary_values_pass() -> None:
    data = parse_document(SPACE + "extra: [-9223372036854775807, 1e-3, 0x1f]\n", "f.yaml")
    assert data["extra"] == [-9223372036854775807, 1e-3, 31]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("value.yaml", SPACE.replace("[1, 2]", '["\\ud800"]')),
        ("key.yaml", SPACE + '"\\udfff": 1\n'),
        (
            "value.json",
            '{"sample_store": "s", "entity_space": [{"name": "x", "values": ["a\\ud800"]}]}',
        ),
    ],
)
def test_text_that_is_not_valid_unicode_is_refused(tmp_path, name, text) -> None:
    """A lone surrogate escape reads as a Python string that cannot be encoded: refused where
    the file is read, not when the space is hashed or sent."""
    with pytest.raises(
        SpecError, match=r"holds text that is not valid Unicode \(.*a lone surrogate"
    ):
        load_space_spec(write(tmp_path, name, text))


@pytest.mark.parametrize(
    ("text", "name"), [("", "f.yaml"), ("# only a comment\n", "f.yaml"), ("null", "f.json")]
)
def test_a_file_without_a_document_is_refused_saying_so(text: str, name: str) -> None:
    with pytest.raises(SpecError) as refused:
        parse_document(text, name)

    assert str(refused.value) == (
        f"{name}: holds no document (it is empty, or only comments or null)"
    )
