"""Who may read the views: loopback by default, a bearer token for every view when it is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from discospace.projector.access import (
    AccessSettingsError,
    api_token,
    bearer_token,
    check_exposure,
    is_loopback,
)
from discospace.projector.app import create_app
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service
from discospace.store.client import StoreSettings

TOKEN = "s3cret-token"
OPEN_PATHS = frozenset({"/health", "/metrics"})


def _service(**settings: object) -> Service:
    return create_app(ProjectorSettings(**settings), store=StoreSettings())


def _client(service: Service, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=service.app)
    return httpx.AsyncClient(transport=transport, base_url="http://projector", headers=headers)


def _view_paths(service: Service) -> list[str]:
    paths = [path for path, _ in service.app.routes if path not in OPEN_PATHS]
    assert len(paths) >= 7
    return paths


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost"])
def test_loopback_addresses_are_recognised(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.7", "projector.svc", "0"])
def test_every_other_address_is_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_the_default_settings_listen_on_loopback_without_a_token() -> None:
    settings = ProjectorSettings()
    assert settings.http_host == "127.0.0.1"
    assert api_token(settings) is None
    check_exposure(settings, None)


def test_listening_on_every_address_without_a_token_is_refused_with_one_sentence() -> None:
    with pytest.raises(AccessSettingsError) as refused:
        _service(http_host="0.0.0.0")
    sentence = str(refused.value)
    assert "0.0.0.0" in sentence
    assert "DISCOSPACE_PROJECTOR_API_TOKEN" in sentence
    assert "\n" not in sentence


def test_listening_elsewhere_without_a_token_is_allowed_when_said_explicitly() -> None:
    service = _service(http_host="0.0.0.0", allow_unauthenticated=True)
    assert _view_paths(service)


def test_the_token_comes_from_the_setting_or_from_a_file(tmp_path: Path) -> None:
    assert api_token(ProjectorSettings(api_token=SecretStr(" abc \n"))) == b"abc"
    (tmp_path / "token").write_text("from-file\n")
    assert api_token(ProjectorSettings(api_token_file=tmp_path / "token")) == b"from-file"


def test_the_token_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCOSPACE_PROJECTOR_API_TOKEN", "from-env")
    settings = ProjectorSettings()
    assert api_token(settings) == b"from-env"
    assert "from-env" not in repr(settings)


@pytest.mark.parametrize("content", ["", "  \n"])
def test_an_empty_token_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "token").write_text(content)
    with pytest.raises(AccessSettingsError, match="is empty"):
        api_token(ProjectorSettings(api_token_file=tmp_path / "token"))


@pytest.mark.parametrize("content", ["first-token\nsecond-token\n", "geheim-äö", "to\x1bken"])
def test_a_token_no_request_can_carry_is_refused_at_start(tmp_path: Path, content: str) -> None:
    """A second line in the token file, or a character beyond ASCII: the projector started,
    and every view answered 401 to everyone (no header can carry the token)."""
    (tmp_path / "token").write_text(content, encoding="utf-8")
    with pytest.raises(AccessSettingsError, match="which no request's header can carry"):
        api_token(ProjectorSettings(api_token_file=tmp_path / "token"))
    assert api_token(ProjectorSettings(api_token="  fine-token_1.2~  \n")) == b"fine-token_1.2~"


def test_a_token_file_that_cannot_be_read_is_refused_with_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(AccessSettingsError, match="cannot be read") as refused:
        api_token(ProjectorSettings(api_token_file=missing))
    assert str(missing) in str(refused.value)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (b"Bearer abc", b"abc"),
        (b"bearer   abc ", b"abc"),
        (b"Basic YWJjOmRlZg==", None),
        (b"Bearer", None),
        (b"abc", None),
    ],
)
def test_the_bearer_token_is_read_from_the_authorization_header(
    header: bytes, token: bytes | None
) -> None:
    assert bearer_token({"headers": [(b"authorization", header)]}) == token


async def test_every_view_answers_401_with_a_sentence_without_the_token() -> None:
    service = _service(api_token=TOKEN)
    async with _client(service) as client:
        for path in _view_paths(service):
            for method in ("GET", "HEAD", "POST"):
                answer = await client.request(method, path, params={"id": "x"})
                assert answer.status_code == 401, (method, path)
                assert answer.headers["www-authenticate"].startswith("Bearer")
            body = (await client.get(path)).json()
            assert body["error"].startswith("this view needs the projector's API token")


@pytest.mark.parametrize(
    "authorization",
    ["Bearer wrong", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", "Bearer "],
)
async def test_a_wrong_token_is_refused_on_every_view(authorization: str) -> None:
    service = _service(api_token=TOKEN)
    async with _client(service, {"Authorization": authorization}) as client:
        for path in _view_paths(service):
            answer = await client.get(path)
            assert answer.status_code == 401
            assert set(answer.json()) == {"error"}


async def test_the_right_token_reaches_every_view() -> None:
    service = _service(api_token=TOKEN, http_host="0.0.0.0")
    async with _client(service, {"Authorization": f"Bearer {TOKEN}"}) as client:
        for path in _view_paths(service):
            takes_id = path in {"/space", "/space/entities", "/operation", "/operation/results"}
            answer = await client.get(path, params={"id": "x"} if takes_id else {})
            # the store is not open in this test: the view answers, 503 and its sentence
            assert answer.status_code == 503, path
            assert "not open yet" in answer.json()["error"]


async def test_health_and_metrics_never_ask_for_the_token() -> None:
    service = _service(api_token=TOKEN)
    async with _client(service) as client:
        assert (await client.get("/metrics")).status_code == 200
        assert (await client.get("/health")).status_code != 401


async def test_without_a_token_the_views_answer_on_loopback() -> None:
    service = _service()
    async with _client(service) as client:
        answer = await client.get("/spaces")
    assert answer.status_code == 503


def test_the_process_refuses_to_start_exposed_without_a_token_in_one_line() -> None:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("DISCOSPACE_")
    }
    environment["DISCOSPACE_PROJECTOR_HTTP_HOST"] = "0.0.0.0"
    finished = subprocess.run(
        [sys.executable, "-m", "discospace.projector"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 2
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.stderr
    assert lines[0].startswith("discospace projector cannot start: the projector would serve")


@pytest.mark.parametrize(
    ("variable", "value", "sentence"),
    [
        ("CLICKHOUSE_URL", "not a url", "CLICKHOUSE_URL must start with http:// or https://"),
        ("DISCOSPACE_STORE_DATABASE", "bad-db!", "The store database name 'bad-db!' must"),
    ],
)
def test_store_settings_that_name_no_store_stop_the_start_before_kafka_is_tried(
    variable: str, value: str, sentence: str
) -> None:
    environment = {"PATH": os.environ.get("PATH", ""), variable: value}
    # No broker is given or running: the store's sentence must come first.
    environment["KAFKA_BOOTSTRAP_SERVERS"] = "127.0.0.1:9"
    ended = subprocess.run(
        [sys.executable, "-m", "discospace.projector"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )

    assert ended.returncode == 2
    assert ended.stderr.startswith(f"discospace projector cannot start: {sentence}")
    assert ended.stderr.count("\n") == 1
