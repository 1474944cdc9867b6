"""Upcasting: old event payloads are rewritten, one version at a time, into the current schema.

An upcaster is a pure function from the JSON object of `from_version` to the JSON object of
`from_version + 1`; `upcast` chains them. Upcasters are registered next to the event they
concern, with `@upcaster("MeasurementCompleted", from_version=1)`.

An additive change keeps the schema version, but may still move a value that older writers put
elsewhere: such rewrites of a part of a payload live here too, and the model they concern
applies them when it is read (`objectives_out_of_options`, for operation parameters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]

_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


class MissingUpcasterError(LookupError):
    """A payload's version is older than the current one and no upcaster bridges the gap."""


def upcaster(type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register the decorated function as the upcaster of `type_name` from `from_version`."""

    def register(function: Upcaster) -> Upcaster:
        key = (type_name, from_version)
        if key in _UPCASTERS:
            raise ValueError(f"{type_name} already has an upcaster from version {from_version}.")
        _UPCASTERS[key] = function
        return function

    return register


def has_upcaster(type_name: str, from_version: int) -> bool:
    """Whether `type_name` can be upcast from `from_version` to the next version."""
    return (type_name, from_version) in _UPCASTERS


def upcast(payload: Payload, type_name: str, version: int, current: int) -> Payload:
    """`payload` (of `type_name` at `version`) rewritten to version `current`.

    The input is not modified; `schema_version` is set at every step.
    """
    result = dict(payload)
    for step in range(version, current):
        function = _UPCASTERS.get((type_name, step))
        if function is None:
            raise MissingUpcasterError(f"no upcaster from {type_name} v{step} to v{step + 1}")
        result = function(dict(result))
        result["schema_version"] = step + 1
    return result


def objectives_out_of_options(parameters: Payload) -> Payload:
    """Operation parameters with `options.objectives` moved to `objectives`.

    Before `objectives` was a parameter of its own, operators read it from `options`. The
    input is not modified; parameters that already give `objectives` are left as they are (and
    refused when they give both).
    """
    options = parameters.get("options")
    if not isinstance(options, dict) or "objectives" not in options:
        return parameters
    if parameters.get("objectives") is not None:
        return parameters
    rest = {name: value for name, value in options.items() if name != "objectives"}
    return {**parameters, "objectives": options["objectives"], "options": rest}
