"""The projector as deployed beyond loopback: a real process on 0.0.0.0 with its token in a file,
read by `discospace.client` and the CLI with and without `DISCOSPACE_API_TOKEN`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.cli.main import app as cli
from discospace.client import Client, UnauthorizedError
from discospace.events import SpaceSubmitted, TopicNames
from discospace.testing.clients import EventClient
from discospace.testing.loop import ServiceProcess

pytestmark = pytest.mark.integration

TOKEN = "a-long-random-token-0123456789abcdef"


@pytest.fixture
def projector(service_process: Callable[..., ServiceProcess], tmp_path: Path) -> ServiceProcess:
    """The projector listening on every address, its token in a file as a secret mounts it."""
    (tmp_path / "token").write_text(f"{TOKEN}\n")
    process = service_process(
        "projector",
        DISCOSPACE_PROJECTOR_HTTP_HOST="0.0.0.0",
        DISCOSPACE_PROJECTOR_API_TOKEN_FILE=str(tmp_path / "token"),
    )
    process.wait_healthy()
    return process


async def _submitted(
    kafka_bootstrap: str, topics: TopicNames, make_submission: Callable[..., SpaceSubmitted]
) -> SpaceSubmitted:
    submission = make_submission(sid="sub-security")
    await EventClient(kafka_bootstrap).publish(submission, topics=topics)
    return submission


def _cli(url: str, *arguments: str, token: str | None) -> tuple[int, str]:
    environment = {"DISCOSPACE_PROJECTOR_URL": url, "DISCOSPACE_API_TOKEN": token or ""}
    result = CliRunner().invoke(cli, list(arguments), env=environment)
    return result.exit_code, result.output


async def test_the_token_is_needed_for_the_views_and_not_for_health_or_metrics(
    projector: ServiceProcess,
    kafka_bootstrap: str,
    topics: TopicNames,
    make_submission: Callable[..., SpaceSubmitted],
    wait_until: Callable[..., Awaitable[None]],
) -> None:
    await _submitted(kafka_bootstrap, topics, make_submission)
    url = projector.url("")
    assert projector.get("/health")[0] == 200
    assert projector.get("/metrics")[0] == 200
    status, body = projector.get("/spaces")
    assert status == 401
    assert "API token" in body

    with Client(url, token=TOKEN) as client:
        await wait_until(lambda: len(client.spaces()) == 1, 60.0)
    with Client(url, token="not-the-token") as client, pytest.raises(UnauthorizedError) as wrong:
        client.spaces()
    assert "DISCOSPACE_API_TOKEN" in str(wrong.value)
    assert "\n" not in str(wrong.value)


async def test_the_client_and_the_cli_send_the_token_from_the_environment(
    projector: ServiceProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = projector.url("")
    monkeypatch.setenv("DISCOSPACE_API_TOKEN", TOKEN)
    with Client(url) as client:
        assert client.spaces() == []
    monkeypatch.delenv("DISCOSPACE_API_TOKEN")

    code, output = _cli(url, "space", "get", "--json", token=TOKEN)
    assert (code, output.strip()) == (0, "[]")
    code, output = _cli(url, "space", "get", token=None)
    assert code != 0
    lines = output.strip().splitlines()
    assert len(lines) == 1
    assert "DISCOSPACE_API_TOKEN" in lines[0]
    assert "Traceback" not in output
    assert os.environ.get("DISCOSPACE_API_TOKEN") is None
