"""`python -m discospace.runtime.contracts proto [--check]`: the generated contracts in proto/.

Writes `proto/events/<Type>.v<N>.json` (the JSON Schema of every event, from
`discospace.events.json_schemas()`) and `proto/asyncapi/<service>.json` (the AsyncAPI document
of every service, from its FastStream app, built with default settings so the environment
never changes it). The schema of a past version of an event stays (changes are additive).
Output is deterministic: sorted keys, two-space indent, trailing newline.
With `--check` nothing is written: the command lists what differs and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from discospace.events import event_type, json_schemas
from discospace.runtime.settings import ServiceSettings

_EVENT_FILE = re.compile(r"events/(?P<type>[A-Za-z]+)\.v(?P<version>[0-9]+)\.json")
SERVICES = ("registry", "explorer", "sampler", "actuator", "projector")


def render(document: Any) -> str:
    """The one text form of a generated document."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def event_documents() -> dict[str, str]:
    """`events/<Type>.v<N>.json` -> JSON Schema text, for every event type."""
    documents = {}
    for name, schema in json_schemas().items():
        version = event_type(name).current_version()
        documents[f"events/{name}.v{version}.json"] = render(schema)
    return documents


def settings_class(service: str) -> type[ServiceSettings]:
    """The settings class in `discospace.<service>.settings`."""
    module = importlib.import_module(f"discospace.{service}.settings")
    for value in vars(module).values():
        is_settings = isinstance(value, type) and issubclass(value, ServiceSettings)
        if is_settings and getattr(value, "service_name", None) == service:
            return value
    raise LookupError(f"discospace.{service}.settings defines no settings for {service}.")


def asyncapi_document(service: str) -> Any:
    """The AsyncAPI document of `service`, wired with its default settings: built without
    this process's `KAFKA_*` and `DISCOSPACE_*` variables (a shell holding a principal's
    credentials wrote a secure server into every document, and `--check` failed)."""
    defaults = settings_class(service).model_construct()
    app_module = importlib.import_module(f"discospace.{service}.app")
    with _environment_without(("KAFKA_", "DISCOSPACE_")):
        built = app_module.create_app(defaults)
    return built.app.schema.to_specification().to_jsonable()


@contextlib.contextmanager
def _environment_without(prefixes: tuple[str, ...]) -> Iterator[None]:
    """The process environment without the variables starting with `prefixes`, for a while."""
    kept = {name: value for name, value in os.environ.items() if name.startswith(prefixes)}
    for name in kept:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(kept)


def asyncapi_documents(services: Sequence[str] = SERVICES) -> dict[str, str]:
    """`asyncapi/<service>.json` -> AsyncAPI text, for every service."""
    return {f"asyncapi/{name}.json": render(asyncapi_document(name)) for name in services}


def generate() -> dict[str, str]:
    """Every generated file of proto/, by path relative to it."""
    return event_documents() | asyncapi_documents()


def differences(root: Path, documents: dict[str, str]) -> list[str]:
    """One line per file of `documents` that is missing or differs under `root`, and per
    generated file under `root` that is no longer generated."""
    lines = []
    for relative, text in sorted(documents.items()):
        path = root / relative
        if not path.exists():
            lines.append(f"missing: {path}")
        elif path.read_text() != text:
            lines.append(f"differs: {path}")
    for stale in sorted(_stale_files(root, documents)):
        lines.append(f"stale: {root / stale}")
    return lines


def _stale_files(root: Path, documents: dict[str, str]) -> set[str]:
    """Generated files no longer generated, except the schemas of past event versions."""
    present = {
        str(path.relative_to(root))
        for folder in ("events", "asyncapi")
        for path in (root / folder).glob("*.json")
    }
    return {name for name in present - set(documents) if not _past_version(name)}


def _past_version(relative: str) -> bool:
    """`events/<Type>.v<N>.json` of a type that still exists at a version above N: the
    contract an old payload was written against, kept because changes are additive."""
    match = _EVENT_FILE.fullmatch(relative)
    if match is None:
        return False
    try:
        return int(match["version"]) < event_type(match["type"]).current_version()
    except LookupError:
        return False


def write(root: Path, documents: dict[str, str]) -> list[str]:
    """Write `documents` under `root`, remove stale generated files; return what changed."""
    changed = differences(root, documents)
    for stale in _stale_files(root, documents):
        (root / stale).unlink()
    for relative, text in documents.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m discospace.runtime.contracts",
        description="Generate proto/: event JSON Schemas and per-service AsyncAPI documents.",
    )
    parser.add_argument("root", type=Path, help="the proto/ directory")
    parser.add_argument("--check", action="store_true", help="fail when regenerating changes it")
    arguments = parser.parse_args(argv)
    documents = generate()
    if arguments.check:
        problems = differences(arguments.root, documents)
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("proto/ is out of date: run `make schemas`.", file=sys.stderr)
        return 1 if problems else 0
    changed = write(arguments.root, documents)
    print(f"{len(documents)} contracts in {arguments.root}, {len(changed)} changed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
