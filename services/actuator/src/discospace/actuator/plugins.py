"""Finding and building actuator plugins from the `discospace.actuators` entry points."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pydantic import ValidationError

from discospace.actuator.plugin import ENTRY_POINT_GROUP, Actuator


class ActuatorConfigError(ValueError):
    """An actuator that cannot be built as configured; the message is one sentence."""


def installed_plugins() -> dict[str, EntryPoint]:
    """Every actuator plugin installed, by name."""
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def load_actuator(name: str, parameters: Mapping[str, Any] | None = None) -> Actuator:
    """The plugin `name`, built from `parameters` (validated by the plugin's model)."""
    plugins = installed_plugins()
    if name not in plugins:
        known = ", ".join(sorted(plugins)) or "none"
        raise ActuatorConfigError(f"No actuator plugin is named '{name}' (installed: {known}).")
    plugin = plugins[name].load()
    try:
        actuator: Actuator = plugin(plugin.Parameters.model_validate(dict(parameters or {})))
    except ValidationError as error:
        raise ActuatorConfigError(
            f"Parameters of actuator '{name}': {_first_problem(error)}."
        ) from None
    _check_catalog(actuator)
    return actuator


def _first_problem(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _check_catalog(actuator: Actuator) -> None:
    for spec in actuator.catalog():
        if spec.actuator != actuator.name:
            raise ActuatorConfigError(
                f"Actuator '{actuator.name}' offers experiment '{spec.experiment}' "
                f"under another actuator's name, '{spec.actuator}'."
            )
