"""The points of a space that a replayed table records, as the `candidates` of an operation.

    .venv/bin/python examples/replay/recorded_points.py examples/replay/fms-a100.yaml \
        examples/replay/fms-a100-space.yaml

prints an `options:` block (indented to sit under an operation file's `parameters:`) whose
`candidates` are the entities of the space that have a row in the table of the replay config,
in the space's order: an Optuna operator given them searches only recorded runs, instead of
spending measurements on combinations the table never recorded ("no recorded measurement").
`fms-a100-tpe.yaml` is the README's example made so. The table is found as the replay worker
finds it (`${DISCOSPACE_DATA_DIR}`, else `../shared/data`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from discospace.actuator.replay.config import load_config
from discospace.actuator.replay.table import ReplayTable
from discospace.core import EntitySpace
from discospace.core.canonical import Value
from discospace.core.loading import load_discovery_space


def recorded_points(config_path: Path, space: EntitySpace) -> list[dict[str, Value]]:
    """Every entity of `space` with a row in the table of the replay config `config_path`."""
    config = load_config(config_path)
    if config.table is None:
        raise SystemExit(f"{config_path} replays no table")
    table = ReplayTable.load(config.table, config_path.parent)
    recorded = (entity.as_dict() for entity in space.sequential())
    return [
        {name: point[name] for name in space.names} for point in recorded if table.rows_of(point)
    ]


def options_block(points: list[dict[str, Value]], space: EntitySpace, source: str) -> str:
    """The `options:` lines of an operation file listing `points` as its candidates."""
    lines = [
        "  options:",
        f"    candidates:  # the {len(points)} of {space.size} points {source} records",
        *(f"      - {json.dumps(point)}" for point in points),
    ]
    return "\n".join(lines)


def main(arguments: list[str]) -> None:
    if len(arguments) != 2:
        raise SystemExit(f"usage: {Path(__file__).name} REPLAY_CONFIG SPACE_FILE")
    config, space_file = (Path(argument) for argument in arguments)
    space = load_discovery_space(space_file).entity_space
    print(options_block(recorded_points(config, space), space, config.name))


if __name__ == "__main__":
    main(sys.argv[1:])
