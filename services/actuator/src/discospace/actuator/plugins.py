"""Finding and building actuator plugins from the `discospace.actuators` entry points.

A plugin is named by its entry point (`synthetic`), or by `module:Class` for a class that is
importable but not installed as an entry point (a plugin under development, a test's plugin).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pydantic import BaseModel, ValidationError

from discospace.actuator.plugin import ENTRY_POINT_GROUP, AnyActuator, is_isolated
from discospace.core.canonical import not_finite


class ActuatorConfigError(ValueError):
    """An actuator that cannot be built as configured; the message is one sentence."""


def installed_plugins() -> dict[str, EntryPoint]:
    """Every actuator plugin installed, by name."""
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def load_actuator(name: str, parameters: Mapping[str, Any] | None = None) -> AnyActuator:
    """The plugin `name` (an entry point, or `module:Class`), built from `parameters`
    (validated by the plugin's model)."""
    plugin = _plugin_class(name)
    try:
        actuator: AnyActuator = plugin(plugin.Parameters.model_validate(dict(parameters or {})))
    except ValidationError as error:
        raise ActuatorConfigError(
            f"Parameters of actuator '{name}': {_first_problem(error)}."
        ) from None
    _check_catalog(actuator)
    _check_isolated(actuator)
    return actuator


def _plugin_class(name: str) -> Any:
    if ":" in name:
        return _imported(name)
    plugins = installed_plugins()
    if name not in plugins:
        known = ", ".join(sorted(plugins)) or "none"
        raise ActuatorConfigError(f"No actuator plugin is named '{name}' (installed: {known}).")
    entry = plugins[name]
    try:
        return entry.load()
    except Exception as error:  # what `module:Class` says in one sentence
        raise ActuatorConfigError(
            f"Actuator plugin '{name}' (entry point {entry.value}) cannot be loaded "
            f"({_import_problem(error)})."
        ) from None


def _imported(reference: str) -> Any:
    """The class `module:Class` names."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or module_name.startswith("."):
        raise ActuatorConfigError(
            f"Actuator plugin '{reference}' names no module: give an absolute module:Class."
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # a syntax error, a module raising at import
        raise ActuatorConfigError(
            f"Actuator plugin '{reference}' cannot be imported ({_import_problem(error)})."
        ) from None
    plugin = getattr(module, attribute, None)
    if plugin is None or not hasattr(plugin, "Parameters"):
        raise ActuatorConfigError(
            f"Actuator plugin '{reference}' names no plugin class (one with `Parameters`)."
        )
    return plugin


def _import_problem(error: Exception) -> str:
    """Why a plugin's module did not import: an ImportError's message says it; any other
    (a syntax error, a module raising while it runs) is named with its type."""
    if isinstance(error, ImportError | AttributeError):
        return str(error)
    return f"{type(error).__name__}: {error}"


_MEMBERS = frozenset({"bool", "int", "float", "str"})
"""The location parts pydantic adds for the members of a union of scalars."""


def _first_problem(error: ValidationError) -> str:
    problems = error.errors(include_url=False)
    infinite = [p for p in problems if p["type"] == "finite_number"]
    first = infinite[0] if infinite else problems[0]  # else "should be a valid boolean"
    where = ".".join(str(part) for part in first["loc"] if part not in _MEMBERS)
    message = str(first["msg"])
    if first["type"] == "value_error":  # a validator's own sentence, without "Value error, "
        message = str(first.get("ctx", {}).get("error", message))
    return f"{where}: {message}" if where else message


def _check_catalog(actuator: AnyActuator) -> None:
    """What readers of the announcement would refuse or misread: another actuator's name, an
    experiment offered twice (the second would replace the first), and an optional property's
    default that is not a finite number (JSON writes NaN as null, which no reader accepts)."""
    try:
        catalog = actuator.catalog()
    except ValidationError as error:  # an experiment its parameters describe is no ExperimentSpec
        raise ActuatorConfigError(
            f"The catalog of actuator '{actuator.name}' is not valid: {_first_problem(error)}."
        ) from None
    seen: set[str] = set()
    for spec in catalog:
        if spec.actuator != actuator.name:
            raise ActuatorConfigError(
                f"Actuator '{actuator.name}' offers experiment '{spec.experiment}' "
                f"under another actuator's name, '{spec.actuator}'."
            )
        if spec.experiment in seen:
            raise ActuatorConfigError(
                f"Actuator '{actuator.name}' offers experiment '{spec.experiment}' twice."
            )
        seen.add(spec.experiment)
        for name, value in spec.optional_properties.items():
            if not_finite(value):
                raise ActuatorConfigError(
                    f"Actuator '{actuator.name}' gives experiment '{spec.experiment}' the "
                    f"default {name} = {value}, which is not a finite number."
                )


def _check_isolated(actuator: AnyActuator) -> None:
    """An isolated plugin must be rebuildable in a child process from its parameters."""
    if not is_isolated(actuator):
        return
    if not callable(getattr(actuator, "measure_blocking", None)):
        raise ActuatorConfigError(
            f"Actuator '{actuator.name}' is isolated but has no measure_blocking(task) method."
        )
    if not isinstance(getattr(actuator, "parameters", None), BaseModel):
        raise ActuatorConfigError(
            f"Actuator '{actuator.name}' is isolated but keeps no `parameters` model to be "
            "rebuilt from in its child process."
        )
