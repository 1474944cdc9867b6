"""A command line click cannot read (a missing argument, an unknown option or command, a value
not among the choices) is one line on stderr and status 2, as every other error of the CLI;
a bare command still shows its help."""

from __future__ import annotations

import subprocess
import sys

import pytest

RUN = "import sys; sys.argv[0] = 'discospace'; from discospace.cli.main import main; main()"


def _discospace(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN, *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env={"NO_COLOR": "1", "PATH": ""},
    )


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        (
            ("space", "show"),
            "error: Missing argument 'space_id' (see 'discospace space show --help')",
        ),
        (
            ("space", "show", "s", "--bogus"),
            "error: No such option: --bogus (see 'discospace space show --help')",
        ),
        (("nope",), "error: No such command 'nope' (see 'discospace --help')"),
        (("--bogus",), "error: No such option: --bogus (see 'discospace --help')"),
        (
            ("space", "show", "s", "--include", "weird"),
            "error: Invalid value for '--include': 'weird' is not one of 'measured', 'elsewhere',"
            " 'unmeasured', 'unsampled', 'all' (see 'discospace space show --help')",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_status_2(arguments: tuple[str, ...], line: str) -> None:
    done = _discospace(*arguments)

    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")


def test_a_bare_command_shows_its_help() -> None:
    done = _discospace("space")

    assert done.returncode == 2
    assert done.stderr.startswith("Usage: discospace space [OPTIONS] COMMAND [ARGS]...")
