"""Reading space and experiment files (YAML or JSON) into the file models.

Every failure becomes one :class:`SpecError` sentence naming the file, the field and the problem,
e.g. ``space.yaml: entity_space[4] (property 'number_gpus'): values[1] should be a number``.

Plain scalars are read as YAML 1.2 reads them (its core schema, what a JSON user would write):
``true``/``false`` are the only booleans, ``010`` is ten, ``1e-3`` a number, while ``yes``,
``no``, ``on``, ``off``, ``1:30`` and ``2024-01-01`` stay text. PyYAML's YAML 1.1 rules would
have read ``values: [yes, no]`` as booleans, ``010`` as eight and ``1:30`` as ninety, silently
giving other values, and other entity ids, than the same space written in JSON.

Every input file is read within :class:`InputLimits` (size, nesting depth, number of values,
identifier lengths, integer size, no duplicate keys), enforced before or while parsing, so a
hostile file is refused with one sentence instead of a traceback or hours of work.
"""

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from discospace.core.discovery import DiscoverySpace
from discospace.core.errors import DiscospaceError, SpecError
from discospace.core.experiment import Experiment
from discospace.core.spec import ExperimentSpec, SpaceSpec

Model = TypeVar("Model", bound=BaseModel)
FileFormat = Literal["yaml", "json"]

_UNION_TAGS = {"bool", "int", "float", "str"}


@dataclass(frozen=True)
class InputLimits:
    """What an input file (space, catalog, operation) may hold at most."""

    max_bytes: int = 1 << 20
    max_depth: int = 64
    max_values: int = 200_000
    max_identifier_chars: int = 256
    max_int: int = 2**63 - 1


DEFAULT_LIMITS = InputLimits()

IDENTIFIER_FIELDS = frozenset(
    {"sample_store", "name", "experiment", "actuator", "space_id", "operator", "property"}
)
"""Fields whose (string) value is an identifier, held to ``max_identifier_chars``."""

_MAX_INT_TEXT = 64
"""Longer integer text is refused before it is converted (Python refuses 4,300 digits)."""


class _LimitError(Exception):
    """An input limit broken while parsing; ``line`` is 1-based when known."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem, self.line = problem, line


def _too_large(text: str, line: int | None = None) -> _LimitError:
    shown = text if len(text) <= 24 else f"{text[:20]}... ({len(text)} characters)"
    return _LimitError(f"integer {shown} is too large", line)


_CORE_TAGS = {
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
}
_CORE_RESOLVERS = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (
        "tag:yaml.org,2002:int",
        r"^(?:[-+]?[0-9][0-9_]*|0o[0-7][0-7_]*|0x[0-9a-fA-F][0-9a-fA-F_]*)$",
        "-+0123456789",
    ),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
)
"""YAML 1.2's core schema for booleans and numbers (underscores between digits allowed, as
PyYAML allows them); ints are tried before floats. It has no timestamps: `2024-01-01` is text."""


_UNREADABLE = (ValueError, KeyError, TypeError, OverflowError, IndexError, AttributeError)
"""What PyYAML's constructors raise on a tagged text they cannot read (its float constructor
indexes an empty text: `!!float ""`; its timestamp one reads the groups of a failed match:
`!!timestamp hello`)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader reading booleans and numbers by YAML 1.2's core schema (`_CORE_RESOLVERS`),
    and keeping to :class:`InputLimits` while composing and constructing: depth, values,
    duplicate keys, integer size."""

    limits: InputLimits = DEFAULT_LIMITS
    _depth = 0
    _nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        self._nodes += 1
        mark = self.peek_event().start_mark
        if self._depth > self.limits.max_depth:
            raise _LimitError(
                f"is nested more than {self.limits.max_depth} levels deep", mark.line + 1
            )
        if self._nodes > self.limits.max_values:
            raise _LimitError(f"has more than {self.limits.max_values} values", mark.line + 1)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`, merged below
                    continue
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, str | int | float | bool):
                    continue
                if key in seen:  # 1 and true too: one would replace the other
                    line = key_node.start_mark.line + 1
                    raise _LimitError(f"key '{_short(key)}' is given twice", line)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        """The value of `node`; a tagged scalar its tag's constructor cannot read (`!!int 1:30`,
        `!!bool maybe`, `!!timestamp 2024-13-45`) is one sentence naming its line, where the
        constructor's own `ValueError` or `KeyError` escaped as a traceback."""
        try:
            return super().construct_object(node, deep=deep)
        except _UNREADABLE as error:
            if not isinstance(node, yaml.ScalarNode):
                raise
            tag = str(node.tag).rsplit(":", 1)[-1]
            raise _LimitError(
                f"'{_short(node.value)}' cannot be read as !!{tag}", node.start_mark.line + 1
            ) from error

    def construct_yaml_int(self, node: Any) -> Any:
        text = str(self.construct_scalar(node))
        line = node.start_mark.line + 1
        if len(text) > _MAX_INT_TEXT:
            raise _too_large(text, line)
        value = _core_int(text)
        if _over(value, self.limits):
            raise _too_large(text, line)
        return value


def _over(value: int, limits: InputLimits) -> bool:
    """Whether a whole number is outside -(max_int + 1) .. max_int (64 bits: -2^63 .. 2^63-1)."""
    return not -limits.max_int - 1 <= value <= limits.max_int


def _core_int(text: str) -> int:
    """A whole number as YAML 1.2's core schema writes it (underscores between digits, as
    PyYAML allows them; `0o17`, `0x1F`; `010` is ten: YAML 1.1 read it as eight)."""
    digits = text.replace("_", "")
    if digits.startswith(("0o", "0x")):
        return int(digits[2:], 8 if digits[1] == "o" else 16)
    return int(digits, 10)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _as_text(loader: _Loader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


for _text_tag in ("tag:yaml.org,2002:value", "tag:yaml.org,2002:merge"):
    # YAML 1.1's `=` and `<<` are text where a value stands (a merge key is read before, as
    # such); PyYAML had no constructor for them: "could not determine a constructor"
    _Loader.add_constructor(_text_tag, _as_text)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rule) for tag, rule in rules if tag not in _CORE_TAGS]
    for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, _rule, _first in _CORE_RESOLVERS:
    _Loader.add_implicit_resolver(_tag, re.compile(_rule), list(_first))


_RESOLVED = tuple((tag, re.compile(rule)) for tag, rule, _ in _CORE_RESOLVERS)


def plain_scalar(text: str) -> bool | int | float | str:
    """What a space file makes of `text` written unquoted: a boolean, a whole number or a real
    by YAML 1.2's core schema (`7.50` is 7.5, `1e3` is 1000.0, `1_000` and `010` are whole),
    anything else (and a number that is not finite or beyond 64 bits) the text itself. For
    cells of a table, which name the entities a space file names."""
    for tag, rule in _RESOLVED:
        if not rule.match(text):
            continue
        if tag.endswith(":bool"):
            return text.lower() == "true"
        digits = text.replace("_", "")
        if tag.endswith(":int"):
            decimal = not digits.startswith(("0o", "0x"))
            if decimal and len(digits.lstrip("+-").lstrip("0")) > 19:  # before int()'s limit
                return text
            try:  # 4,300 leading zeros are beyond int()'s digit limit too
                value = _core_int(text)
            except ValueError:
                return text
            return text if _over(value, DEFAULT_LIMITS) else value
        if digits.lstrip("+-").startswith(".") and digits[-1].isalpha():  # .inf, .nan
            return text
        number = float(digits)
        return number if math.isfinite(number) else text
    return text


def _short(text: Any, length: int = 40) -> str:
    text = str(text)
    return text if len(text) <= length else f"{text[:length]}..."


def _over_size(size: int, limits: InputLimits) -> str:
    return f"is {size} bytes, over the limit of {limits.max_bytes} bytes"


def read_document(path: Path, limits: InputLimits = DEFAULT_LIMITS) -> str:
    """A file's text, refused with one sentence if it is missing, unreadable or over
    ``limits.max_bytes`` (checked before reading it)."""
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise SpecError(f"{path}: {_over_size(size, limits)}")
        with path.open("rb") as file:
            data = file.read(limits.max_bytes + 1)
        if len(data) > limits.max_bytes:
            raise SpecError(f"{path}: {_over_size(len(data), limits)}")
        return data.decode("utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"{path}: cannot be read ({error})") from None


def _read(path: Path) -> str:
    return read_document(path)


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _LimitError(f"key '{_short(key)}' is given twice")
        result[key] = value
    return result


def _json_int(limits: InputLimits) -> Any:
    def convert(text: str) -> int:
        if len(text) > _MAX_INT_TEXT:
            raise _too_large(text)
        value = int(text)
        if _over(value, limits):
            raise _too_large(text)
        return value

    return convert


_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
"""A line break as YAML (PyYAML) counts one, so this line is the one its other errors name."""


def _parse(text: str, source: str, fmt: FileFormat | None, limits: InputLimits) -> Any:
    if fmt == "json" or (fmt is None and source.lower().endswith(".json")):
        try:
            return json.loads(text, object_pairs_hook=_json_pairs, parse_int=_json_int(limits))
        except json.JSONDecodeError as error:
            raise SpecError(f"{source}: line {error.lineno}: {error.msg}") from None
        except RecursionError:
            raise _LimitError(f"is nested more than {limits.max_depth} levels deep") from None
    try:  # the reader checks every character as it is built
        loader = _Loader(text)
    except yaml.reader.ReaderError as error:
        line = len(_LINE_BREAK.findall(text, 0, error.position)) + 1
        character = f"U+{error.character:04X}" if isinstance(error.character, int) else "?"
        raise SpecError(
            f"{source}: line {line}: the control character {character} is not allowed in YAML "
            '(write it as an escape in a double-quoted string, e.g. "\\e" for ESC)'
        ) from None
    loader.limits = limits
    try:
        return loader.get_single_data()
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SpecError(f"{source}: {where}{problem}") from None
    except RecursionError:
        raise _LimitError(f"is nested more than {limits.max_depth} levels deep") from None
    finally:
        loader.dispose()


def parse_document(
    text: str, source: str, fmt: FileFormat | None = None, limits: InputLimits = DEFAULT_LIMITS
) -> Any:
    """The data of a YAML or JSON document (JSON when ``fmt`` says so or ``source`` ends .json),
    within ``limits``: a :class:`SpecError` sentence names what broke them."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > limits.max_bytes:
        raise SpecError(f"{source}: {_over_size(size, limits)}")
    try:
        data = _parse(text, source, fmt, limits)
        check_limits(data, limits)
    except _LimitError as refused:
        where = f"line {refused.line}: " if refused.line is not None else ""
        raise SpecError(f"{source}: {where}{refused.problem}") from None
    if data is None:
        raise SpecError(f"{source}: holds no document (it is empty, or only comments or null)")
    return data


def check_limits(data: Any, limits: InputLimits = DEFAULT_LIMITS) -> None:
    """Walk parsed data (aliases expanded) once, without recursion: depth, number of values,
    identifier and key lengths, integer size; raises :class:`_LimitError` at the first excess."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > limits.max_values:
            raise _LimitError(f"has more than {limits.max_values} values")
        if depth > limits.max_depth:
            raise _LimitError(f"is nested more than {limits.max_depth} levels deep")
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and _over(node, limits):
            raise _too_large(str(node) if node.bit_length() < 1000 else "(very long)")
        if isinstance(node, str):
            _check_text(node)
        if isinstance(node, Mapping):
            for key, value in node.items():
                _check_text(key)
                _check_identifier(key, str(key), limits)
                if str(key) in IDENTIFIER_FIELDS:
                    _check_identifier(value, str(key), limits)
                stack.append((value, depth + 1))
        elif isinstance(node, list | tuple):
            stack.extend((item, depth + 1) for item in node)


def _check_text(value: Any) -> None:
    """Text that UTF-8 cannot encode (a lone surrogate, `"\\ud800"` in JSON or YAML) could be
    neither hashed nor sent."""
    if not isinstance(value, str):
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        shown = repr(value if len(value) <= 40 else value[:37] + "...")
        raise _LimitError(
            f"holds text that is not valid Unicode ({shown}: a lone surrogate at character "
            f"{error.start + 1})"
        ) from None


def _check_identifier(value: Any, field: str, limits: InputLimits) -> None:
    if isinstance(value, str) and len(value) > limits.max_identifier_chars:
        raise _LimitError(
            f"{_short(field)} is {len(value)} characters long, over the limit of "
            f"{limits.max_identifier_chars} characters"
        )


def _label(item: Any) -> str:
    """A readable name for a list item: the property or experiment it declares."""
    if not isinstance(item, Mapping):
        return ""
    if "name" in item:
        return f" (property '{item['name']}')"
    return f" (experiment '{item['experiment']}')" if "experiment" in item else ""


def _child(data: Any, key: Any) -> Any:
    try:
        return data[key]
    except (KeyError, IndexError, TypeError):
        return None


def _where(loc: tuple[Any, ...], data: Any) -> str:
    """``entity_space[4] (property 'x'): values[1]``: the top item is named after its content."""
    parts: list[str] = []
    node, labelled = data, False
    for key in loc:
        node = _child(node, key)
        if not isinstance(key, int):
            parts.append(str(key))
            continue
        if not parts:
            parts.append("")
        parts[-1] += f"[{key}]"
        if not labelled:
            parts[-1] += _label(node)
            labelled = True
    head, rest = parts[0], parts[1:]
    return f"{head}: {'.'.join(rest)}" if rest and labelled else ".".join(parts)


def describe_validation_error(error: ValidationError, data: Any, source: str) -> str:
    """One sentence for the first problem of a validation error (and how many more)."""
    grouped: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for item in error.errors():
        loc = tuple(item["loc"])
        if loc and _is_union_tag(loc[-1]):
            loc = loc[:-1]
        grouped.setdefault(loc, []).append(dict(item))
    loc, items = next(iter(grouped.items()))
    message = problem_text(items)
    others = len(grouped) - 1
    more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
    where = _where(loc, data) if loc else "the document"
    return f"{source}: {where}: {message}{more}"


def _is_union_tag(part: object) -> bool:
    """Whether a location part names a member of a union (pydantic adds one per member)."""
    return isinstance(part, str) and (
        part in _UNION_TAGS or part.startswith(("constrained-", "literal["))
    )


def problem_text(items: list[dict[str, Any]]) -> str:
    """What is wrong at one place of a document, from pydantic's errors there (several for a
    union: one per member), in words for a person: "should be a list", "is required"."""
    tags = {str(item["loc"][-1]) for item in items if item["loc"]} & _UNION_TAGS
    if any(item["type"] == "finite_number" for item in items):
        return "should be a finite number"
    if len(items) > 1 and tags == {"int", "float"}:
        return "should be a number"
    if len(items) > 1 and tags:
        return "should be a string, a number or a boolean"
    if len(items) > 1:  # another union: what each of its members asks for
        asks = dict.fromkeys(_lowered(str(item["msg"])) for item in items)
        return ", or ".join(asks)
    first = items[0]
    if first["type"] in ("tuple_type", "list_type"):
        return "should be a list"
    if first["type"] == "extra_forbidden":
        return "is not a known field"
    if first["type"] == "missing":
        return "is required"
    if first["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return "should be a mapping of fields"
    if first["type"] == "string_type" and isinstance(first.get("input"), int | float | bool):
        return (
            f"should be text, not the {_kind(first['input'])} {first['input']!r} "
            "(quote it to keep it as written)"
        )
    return _lowered(str(first["msg"]))


def _kind(value: int | float | bool) -> str:
    return "boolean" if isinstance(value, bool) else "number"


def _lowered(message: str) -> str:
    return message[:1].lower() + message[1:]


def validate_document(data: Any, model: type[Model], source: str) -> Model:
    """``data`` as ``model``; a :class:`SpecError` names the field and the problem."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise SpecError(describe_validation_error(error, data, source)) from None


def parse_space_spec(text: str, source: str = "<text>", fmt: FileFormat | None = None) -> SpaceSpec:
    return validate_document(parse_document(text, source, fmt), SpaceSpec, source)


def load_space_spec(path: str | Path) -> SpaceSpec:
    """A space file as its file model (structure checked, domains not yet)."""
    file = Path(path)
    return parse_space_spec(_read(file), str(file))


def discovery_space_from_spec(spec: SpaceSpec, source: str) -> DiscoverySpace:
    """The space a spec describes; domain errors are prefixed with ``source``."""
    try:
        return DiscoverySpace.from_spec(spec)
    except DiscospaceError as error:
        raise type(error)(f"{source}: {error}") from None


def load_discovery_space(path: str | Path) -> DiscoverySpace:
    """A space file, fully validated (domains well formed, experiments not duplicated)."""
    return discovery_space_from_spec(load_space_spec(path), str(path))


def load_experiment_specs(path: str | Path) -> tuple[ExperimentSpec, ...]:
    """A catalog file: a list of experiments (or one experiment), each (actuator, experiment)
    once: a second entry would silently replace the first in a catalog."""
    file = Path(path)
    data = parse_document(_read(file), str(file))
    items = data if isinstance(data, list) else [data]
    adapter = TypeAdapter(tuple[ExperimentSpec, ...])
    try:
        specs = adapter.validate_python(items)
    except ValidationError as error:
        raise SpecError(describe_validation_error(error, items, str(file))) from None
    first: dict[tuple[str, str], int] = {}
    for index, spec in enumerate(specs):
        earlier = first.setdefault((spec.actuator, spec.experiment), index)
        if earlier != index:
            raise SpecError(
                f"{file}: experiment '{spec.experiment}' of actuator '{spec.actuator}' is given "
                f"twice (items {earlier + 1} and {index + 1}); give each experiment once"
            )
        try:  # what the catalog refuses (a target named twice), said with the file's name
            Experiment.from_spec(spec)
        except DiscospaceError as error:
            raise SpecError(f"{file}: item {index + 1}: {error}") from None
    return specs
