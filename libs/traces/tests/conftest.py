from pathlib import Path

import pytest

from discospace.traces.data import TraceDataMissingError, data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real trace folder; the test skips, saying where it looked, when it is absent."""
    try:
        return data_dir()
    except TraceDataMissingError as error:
        pytest.skip(str(error))
