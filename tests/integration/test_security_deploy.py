"""Every deployment gives each service the Kafka login of its own principal, from secrets.

The settings a service would read are built from what each deployment gives it (Kubernetes:
the shared ConfigMap, then the container's env, the mounted Secrets standing in as files in a
temporary folder; compose with kafka-secure.yml: its environment and secret files) and checked
with the runtime's own `kafka_security`, as the service would at start.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.runtime.security import kafka_security
from discospace.runtime.settings import KafkaSecuritySettings

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
COMPOSE = REPO / "deploy" / "compose"
PRINCIPAL_OF = {
    "registry.yaml": "registry",
    "explorer.yaml": "explorer",
    "sampler.yaml": "sampler",
    "actuator-cpu.yaml": "actuator",
    "actuator-gpu.yaml": "actuator",
    "projector.yaml": "projector",
}


@pytest.fixture(scope="module")
def cafile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ca")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.crt"), "-subj", "/CN=ca"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return folder / "ca.crt"


def _deployment(name: str) -> dict[str, Any]:
    documents = yaml.safe_load_all((K8S / name).read_text())
    return next(d for d in documents if d["kind"] == "Deployment")


def _settings(env: dict[str, str], files: dict[str, Path]) -> KafkaSecuritySettings:
    """The Kafka settings of `env`, each file path replaced by the stand-in that `files` maps
    it to (what the mounted secret would hold)."""
    fields = {
        name.removeprefix("KAFKA_").lower(): str(files.get(value, value))
        for name, value in env.items()
        if name.startswith("KAFKA_") and name != "KAFKA_BOOTSTRAP_SERVERS"
    }
    return KafkaSecuritySettings(**fields)


@pytest.mark.parametrize("manifest", sorted(PRINCIPAL_OF))
def test_each_k8s_service_logs_in_as_its_principal_with_a_password_from_its_secret(
    manifest: str, cafile: Path, tmp_path: Path
) -> None:
    configmap = yaml.safe_load((K8S / "configmap.yaml").read_text())["data"]
    pod = _deployment(manifest)["spec"]["template"]["spec"]
    [container] = pod["containers"]
    plain = {item["name"]: item["value"] for item in container["env"] if "value" in item}
    env = {**configmap, **plain}
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    password = tmp_path / "password"
    password.write_text("from-the-secret\n")
    principal = PRINCIPAL_OF[manifest]

    security = kafka_security(
        _settings(
            env,
            {
                f"{mounts['kafka-login']}/password": password,
                f"{mounts['kafka-ca']}/ca.crt": cafile,
            },
        )
    )

    assert (security.protocol, security.username) == ("SASL_SSL", principal)
    assert security.password == "from-the-secret"
    assert volumes["kafka-login"]["secret"]["secretName"] == f"discospace-kafka-{principal}"
    assert volumes["kafka-ca"]["secret"]["secretName"] == "discospace-kafka-ca"
    kafka_mounts = [m for m in container["volumeMounts"] if m["name"].startswith("kafka-")]
    assert [m.get("readOnly") for m in kafka_mounts] == [True, True]
    assert not any(
        "PASSWORD" in item["name"] and "FILE" not in item["name"] for item in container["env"]
    )


def test_each_compose_service_on_a_secure_cluster_logs_in_as_its_principal(
    cafile: Path, tmp_path: Path
) -> None:
    overlay = yaml.safe_load((COMPOSE / "kafka-secure.yml").read_text())
    base = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
    secrets = overlay["secrets"]
    for name, service in overlay["services"].items():
        assert name in base["services"]
        env = {
            key: value
            for key, value in service["environment"].items()
            if key != "KAFKA_BOOTSTRAP_SERVERS"
        }
        principal = env["KAFKA_SASL_USERNAME"]
        password_secret = Path(env["KAFKA_SASL_PASSWORD_FILE"]).name
        password = tmp_path / f"{principal}.password"
        password.write_text("pw")

        security = kafka_security(
            _settings(
                env,
                {
                    env["KAFKA_SASL_PASSWORD_FILE"]: password,
                    env["KAFKA_SSL_CAFILE"]: cafile,
                },
            )
        )

        assert security.secure
        assert name.startswith(principal) or (name, principal) == ("actuator-gpu", "actuator")
        assert password_secret in service["secrets"]
        assert secrets[password_secret]["file"].endswith(f"/{principal}.password")
