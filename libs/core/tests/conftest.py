from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def seed_space_file() -> Path:
    return REPO_ROOT / "tests" / "data" / "seed-space.yaml"
