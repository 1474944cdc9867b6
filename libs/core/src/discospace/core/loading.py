"""Reading space and experiment files (YAML or JSON) into the file models.

Every failure becomes one :class:`SpecError` sentence naming the file, the field and the problem,
e.g. ``space.yaml: entity_space[4] (property 'number_gpus'): values[1] should be a number``.
YAML numbers such as ``1e-3`` are read as numbers (PyYAML's YAML 1.1 default reads them as text).
"""

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from discospace.core.discovery import DiscoverySpace
from discospace.core.errors import DiscospaceError, SpecError
from discospace.core.spec import ExperimentSpec, SpaceSpec

Model = TypeVar("Model", bound=BaseModel)
FileFormat = Literal["yaml", "json"]

_UNION_TAGS = {"bool", "int", "float", "str"}


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-3`` and ``1E5`` as floats (YAML 1.2 does)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\d[\d_]*(\.\d*)?|\.\d+)[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"{path}: cannot be read ({error})") from None


def parse_document(text: str, source: str, fmt: FileFormat | None = None) -> Any:
    """The data of a YAML or JSON document (JSON when ``fmt`` says so or ``source`` ends .json)."""
    if fmt == "json" or (fmt is None and source.lower().endswith(".json")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise SpecError(f"{source}: line {error.lineno}: {error.msg}") from None
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SpecError(f"{source}: {where}{problem}") from None


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
        if loc and loc[-1] in _UNION_TAGS:
            loc = loc[:-1]
        grouped.setdefault(loc, []).append(dict(item))
    loc, items = next(iter(grouped.items()))
    message = _message(items)
    others = len(grouped) - 1
    more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
    where = _where(loc, data) if loc else "the document"
    return f"{source}: {where}: {message}{more}"


def _message(items: list[dict[str, Any]]) -> str:
    tags = {str(item["loc"][-1]) for item in items if item["loc"]} & _UNION_TAGS
    if len(items) > 1 and tags == {"int", "float"}:
        return "should be a number"
    if len(items) > 1 and tags:
        return "should be a string, a number or a boolean"
    first = items[0]
    if first["type"] == "extra_forbidden":
        return "is not a known field"
    if first["type"] == "missing":
        return "is required"
    if first["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return "should be a mapping of fields"
    return str(first["msg"])[0].lower() + str(first["msg"])[1:]


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
    """A catalog file: a list of experiments (or one experiment)."""
    file = Path(path)
    data = parse_document(_read(file), str(file))
    items = data if isinstance(data, list) else [data]
    adapter = TypeAdapter(tuple[ExperimentSpec, ...])
    try:
        return adapter.validate_python(items)
    except ValidationError as error:
        raise SpecError(describe_validation_error(error, items, str(file))) from None
