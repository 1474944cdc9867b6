"""Every deployment of the projector passes its own start check: beyond loopback, a token.

The projector's settings are built from what each deployment gives it (the image's ENV, then
compose's or Kubernetes' env, a mounted secret standing in as a file) and checked with the
projector's own `api_token` and `check_exposure`, as `python -m discospace.projector` would.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.projector.access import api_token, check_exposure, is_loopback
from discospace.projector.settings import ProjectorSettings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PREFIX = "DISCOSPACE_PROJECTOR_"


def _image_env() -> dict[str, str]:
    """The ENV lines of the projector's image."""
    dockerfile = (REPO / "services" / "projector" / "Dockerfile").read_text()
    pairs = re.findall(r"(\w+)=(\S+)", " ".join(re.findall(r"^ENV (.+)$", dockerfile, re.M)))
    return dict(pairs)


def _settings(environment: dict[str, Any], secret_dir: Path) -> ProjectorSettings:
    """The settings the projector reads from `environment`; secret files exist in `secret_dir`."""
    fields: dict[str, Any] = {}
    for name, value in environment.items():
        if not name.startswith(PREFIX):
            continue
        field = name.removeprefix(PREFIX).lower()
        if field == "api_token_file":
            value = secret_dir / Path(value).name
            value.write_text("a-token-from-the-secret\n")
        fields[field] = value
    return ProjectorSettings(**fields)


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose" / "docker-compose.yml").read_text())


def _k8s_container() -> dict[str, Any]:
    documents = yaml.safe_load_all((DEPLOY / "k8s" / "projector.yaml").read_text())
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _k8s_env(container: dict[str, Any]) -> dict[str, Any]:
    """Plain values as they are; a value from a Secret as the token it will hold."""
    env: dict[str, Any] = {}
    for item in container["env"]:
        env[item["name"]] = item.get("value", "a-token-from-the-secret")
    return env


def test_the_image_listens_on_every_address_so_its_deployments_must_give_a_token() -> None:
    assert not is_loopback(_image_env()[f"{PREFIX}HTTP_HOST"])


def test_the_compose_projector_passes_its_start_check_with_a_token_from_a_secret(
    tmp_path: Path,
) -> None:
    compose = _compose()
    service = compose["services"]["projector"]
    environment = {**_image_env(), **service["environment"]}
    settings = _settings(environment, tmp_path)

    assert not is_loopback(settings.http_host)
    assert settings.allow_unauthenticated is False
    check_exposure(settings, api_token(settings))
    secret = Path(environment[f"{PREFIX}API_TOKEN_FILE"]).name
    assert environment[f"{PREFIX}API_TOKEN_FILE"] == f"/run/secrets/{secret}"
    assert secret in service["secrets"]
    assert compose["secrets"][secret] == {"environment": "DISCOSPACE_API_TOKEN"}


def test_the_compose_projector_without_its_secret_would_be_refused(tmp_path: Path) -> None:
    service = _compose()["services"]["projector"]
    environment = {**_image_env(), **service["environment"]}
    del environment[f"{PREFIX}API_TOKEN_FILE"]
    settings = _settings(environment, tmp_path)
    with pytest.raises(ValueError, match="without a token"):
        check_exposure(settings, api_token(settings))


def test_the_k8s_projector_reads_its_token_from_a_secret_and_passes_its_start_check(
    tmp_path: Path,
) -> None:
    container = _k8s_container()
    [token] = [e for e in container["env"] if e["name"] == f"{PREFIX}API_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"] == {"name": "discospace-api-token", "key": "token"}
    assert "optional" not in token["valueFrom"]["secretKeyRef"]
    settings = _settings({**_image_env(), **_k8s_env(container)}, tmp_path)
    assert not is_loopback(settings.http_host)
    check_exposure(settings, api_token(settings))


def test_the_k8s_probes_and_scrape_ask_only_for_paths_that_need_no_token() -> None:
    container = _k8s_container()
    probed = {container[probe]["httpGet"]["path"] for probe in ("readinessProbe", "livenessProbe")}
    assert probed == {"/health"}


def test_make_up_leaves_the_projector_on_loopback() -> None:
    scripts = " ".join(path.read_text() for path in (DEPLOY / "local").glob("*.sh"))
    assert f"{PREFIX}HTTP_HOST" not in scripts
    assert ProjectorSettings().http_host == "127.0.0.1"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"DISCOSPACE_PROJECTOR_API_TOKEN": "p"}, "p"),
        ({"DISCOSPACE_PROJECTOR_API_TOKEN": "p", "DISCOSPACE_API_TOKEN": "c"}, "c"),
        ({}, "unset"),
    ],
)
def test_the_demo_cli_gets_the_projector_token_make_up_gave(
    given: dict[str, str], expected: str
) -> None:
    environment = {key: value for key, value in os.environ.items() if not key.endswith("API_TOKEN")}
    script = (
        f"source {DEPLOY / 'local' / 'settings.sh'}; export_client_settings; "
        'echo "${DISCOSPACE_API_TOKEN:-unset}"'
    )
    finished = subprocess.run(
        ["bash", "-c", script],
        env={**environment, **given},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert finished.stdout.strip() == expected
