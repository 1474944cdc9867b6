"""Where the traces are read from, and the sentence a user gets when they are absent."""

from pathlib import Path

import pytest

from discospace.traces.data import (
    DATA_DIR_ENV,
    TraceDataMissingError,
    data_dir,
    fms_data_dir,
    repo_root,
    zeus_data_dir,
)


def test_the_environment_variable_names_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "zeus-nsdi23-trace").mkdir()
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert data_dir() == tmp_path
    assert zeus_data_dir() == tmp_path / "zeus-nsdi23-trace"


def test_without_the_variable_the_folder_beside_the_repository_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    expected = repo_root().parent / "shared" / "data"
    if expected.is_dir():
        assert data_dir() == expected
    else:
        with pytest.raises(TraceDataMissingError, match=str(expected)):
            data_dir()


def test_an_absent_folder_is_a_typed_error_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(DATA_DIR_ENV, str(missing))
    with pytest.raises(TraceDataMissingError, match=f"{missing} does not exist.*{DATA_DIR_ENV}"):
        data_dir()
    with pytest.raises(TraceDataMissingError, match="fms-acceleration-a100"):
        fms_data_dir(tmp_path)


def test_a_folder_given_that_is_not_a_trace_folder_is_named_without_the_variable(
    tmp_path: Path,
) -> None:
    with pytest.raises(TraceDataMissingError) as refused:
        zeus_data_dir(tmp_path)

    assert str(refused.value) == (
        f"{tmp_path} is neither a zeus-nsdi23-trace trace folder nor a folder that holds "
        "zeus-nsdi23-trace/; give one of those."
    )


def test_a_file_named_as_the_data_folder_is_said_to_be_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was said not to exist."""
    table = tmp_path / "a100_80gb.csv"
    table.write_text("model_name_or_path\n")
    monkeypatch.setenv(DATA_DIR_ENV, str(table))

    with pytest.raises(TraceDataMissingError, match=f"{table} is a file, not a folder; set "):
        data_dir()
