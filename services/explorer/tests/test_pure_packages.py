"""The explorer's pure packages (`domain/`, `operators/`) stay pure: read from their source.

A module there may not import the service side (Kafka, FastStream, Prometheus, the runtime,
`discospace.explorer.service`, the app or its settings), nor a clock or global randomness:
time comes in as an argument and every random generator is built from a seed it is given. And
the domain imports no operator: operators depend on the domain, never the other way round.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import discospace.explorer

EXPLORER = Path(discospace.explorer.__file__).parent
PURE_PACKAGES = ("domain", "operators")

SERVICE_SIDE = (
    "aiokafka",
    "faststream",
    "prometheus_client",
    "discospace.runtime",
    "discospace.explorer.service",
    "discospace.explorer.app",
    "discospace.explorer.settings",
    "discospace.explorer.__main__",
)
IMPURE_MODULES = ("time", "asyncio", "secrets", "uuid")
"""A clock, an event loop, or randomness from the operating system."""
CLOCK_CALLS = ("now", "utcnow", "today")
"""`datetime.now()` and friends: the time must come in as an argument."""
SEEDED_CONSTRUCTORS = ("Random", "default_rng", "Generator", "SeedSequence", "PCG64")
"""What a `random.` or `numpy.random.` call may build, and only from an argument (a seed)."""
CLOCKS = ("discospace.events.factory.utc_now",)
"""Clocks imported by name (the runtime passes `utc_now` in; the domain never imports it)."""


def pure_modules() -> list[Path]:
    return sorted(path for package in PURE_PACKAGES for path in (EXPLORER / package).rglob("*.py"))


def imported_modules(tree: ast.AST) -> list[tuple[str, str | None]]:
    """(module, name) for every import: name None for `import module`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.extend((node.module, alias.name) for alias in node.names)
    return found


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _dotted(node: ast.expr) -> str:
    """`a.b.c` for an attribute chain over a name; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def impure_call(call: ast.Call) -> str | None:
    """Why a call reads a clock or unseeded randomness; None when it does not."""
    name = _dotted(call.func)
    head, _, last = name.rpartition(".")
    if last in CLOCK_CALLS and head.split(".")[-1] in ("datetime", "date"):
        return f"{name}() reads the clock"
    if head.split(".")[-1] == "random" and head.split(".")[0] in ("random", "np", "numpy"):
        if last not in SEEDED_CONSTRUCTORS:
            return f"{name}() draws from global randomness"
        if not call.args and not call.keywords:
            return f"{name}() is not given a seed"
    return None


def problems(source: str) -> list[str]:
    """What makes a module's source impure, one line per finding."""
    tree = ast.parse(source)
    found = []
    for module, name in imported_modules(tree):
        full = f"{module}.{name}" if name else module
        if _within(module, SERVICE_SIDE) or _within(full, SERVICE_SIDE):
            found.append(f"imports the service side: {full}")
        elif _within(module, IMPURE_MODULES) or full in CLOCKS:
            found.append(f"imports a clock or randomness: {full}")
        elif module == "random" and name not in (None, *SEEDED_CONSTRUCTORS):
            found.append(f"imports global randomness: {full}")
    calls = (node for node in ast.walk(tree) if isinstance(node, ast.Call))
    found.extend(reason for call in calls if (reason := impure_call(call)) is not None)
    return found


def test_the_pure_packages_hold_modules():
    names = {path.relative_to(EXPLORER).as_posix() for path in pure_modules()}
    assert {"domain/decide.py", "operators/random_walk.py", "operators/zeus/policy.py"} <= names


@pytest.mark.parametrize(
    "path", pure_modules(), ids=lambda path: path.relative_to(EXPLORER).as_posix()
)
def test_a_pure_module_imports_no_runtime_clock_or_global_randomness(path):
    assert problems(path.read_text()) == []


@pytest.mark.parametrize("path", sorted((EXPLORER / "domain").rglob("*.py")), ids=lambda p: p.name)
def test_the_domain_imports_no_operator(path):
    """Operators implement the domain's interface (`domain/operator.py`); the engine knows them
    only through the registry it is given."""
    imported = [module for module, _ in imported_modules(ast.parse(path.read_text()))]
    assert [m for m in imported if _within(m, ("discospace.explorer.operators",))] == []


@pytest.mark.parametrize(
    "source",
    [
        "from aiokafka import AIOKafkaConsumer",
        "import prometheus_client",
        "from discospace.explorer.service.live import LiveExplorer",
        "from discospace.explorer import service",
        "from discospace.runtime.folding import fold_then_follow",
        "from discospace.explorer.settings import ExplorerSettings",
        "import time",
        "from discospace.events.factory import utc_now",
        "from datetime import datetime\nnow = datetime.now()",
        "import datetime\nnow = datetime.datetime.now(datetime.UTC)",
        "import random\nx = random.random()",
        "from random import choice",
        "import random\nx = random.Random()",
        "import numpy as np\nx = np.random.rand(3)",
        "import numpy as np\nrng = np.random.default_rng()",
    ],
)
def test_the_check_finds_each_kind_of_impurity(source):
    assert problems(source) != []


@pytest.mark.parametrize(
    "source",
    [
        "import random\nx = random.Random(seed).sample(free, 2)",
        "from random import Random",
        "import numpy as np\nrng = np.random.default_rng([seed, decision])",
        "from discospace.events.factory import Clock",
        "from datetime import datetime, timedelta\nlater = now + timedelta(seconds=1)",
    ],
)
def test_the_check_lets_seeded_randomness_and_given_times_through(source):
    assert problems(source) == []
