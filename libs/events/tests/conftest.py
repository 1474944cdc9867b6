"""Fixtures for the event contract tests: the stored payloads, and a fixed clock."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

PAYLOADS = Path(__file__).parent / "payloads"
_NAME = re.compile(r"(?P<type>[A-Za-z]+)\.v(?P<version>[0-9]+)\.json")


def stored_payloads() -> dict[tuple[str, int], dict[str, Any]]:
    """(type, version) -> the stored JSON object, for every file under payloads/."""
    stored = {}
    for path in sorted(PAYLOADS.glob("*.json")):
        match = _NAME.fullmatch(path.name)
        assert match, f"{path.name} is not named <Type>.v<N>.json"
        stored[(match["type"], int(match["version"]))] = json.loads(path.read_text())
    return stored


@pytest.fixture(scope="session")
def payloads() -> dict[tuple[str, int], dict[str, Any]]:
    return stored_payloads()


@pytest.fixture
def at() -> datetime:
    return datetime(2026, 11, 21, 17, 0, tzinfo=UTC)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`stored_payload`: one test per stored file; `event_class`: one test per event type."""
    if "stored_payload" in metafunc.fixturenames:
        stored = stored_payloads()
        ids = [f"{name}.v{version}" for name, version in stored]
        metafunc.parametrize("stored_payload", list(stored.items()), ids=ids)
    if "event_class" in metafunc.fixturenames:
        from discospace.events import all_event_types

        classes = all_event_types()
        metafunc.parametrize("event_class", classes, ids=[c.type_name() for c in classes])
