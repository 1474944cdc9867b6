"""Kafka security settings: what every client is built with; one sentence when they are wrong."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from faststream.security import SASLPlaintext, SASLScram256, SASLScram512

from discospace.runtime.security import KafkaSecurity, KafkaSecurityError, kafka_security

SECURITY_VARIABLES = (
    "KAFKA_SECURITY_PROTOCOL",
    "KAFKA_SASL_MECHANISM",
    "KAFKA_SASL_USERNAME",
    "KAFKA_SASL_PASSWORD",
    "KAFKA_SASL_PASSWORD_FILE",
    "KAFKA_SSL_CAFILE",
)


@pytest.fixture(autouse=True)
def no_security_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SECURITY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def cafile(tmp_path: Path) -> Path:
    """A real CA certificate, made by openssl as deploy/local/kafka.sh makes its own."""
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(tmp_path / "ca.key"), "-out", str(tmp_path / "ca.crt"),
            "-subj", "/CN=test CA",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return tmp_path / "ca.crt"


def secure(
    monkeypatch: pytest.MonkeyPatch, cafile: Path | None = None, /, **variables: str
) -> None:
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    if cafile is not None:
        monkeypatch.setenv("KAFKA_SSL_CAFILE", str(cafile))
    for name, value in variables.items():
        monkeypatch.setenv(f"KAFKA_{name.upper()}", value)


def test_by_default_clients_connect_in_plaintext_with_no_extra_arguments() -> None:
    security = kafka_security()
    assert security == KafkaSecurity()
    assert security.client_kwargs() == {}
    assert security.faststream() is None


def test_sasl_ssl_gives_aiokafka_a_scram_login_and_tls_checking_the_ca(
    monkeypatch: pytest.MonkeyPatch, cafile: Path
) -> None:
    secure(monkeypatch, cafile, sasl_username="explorer", sasl_password="s3cret")

    kwargs = kafka_security().client_kwargs()

    context = kwargs.pop("ssl_context")
    assert kwargs == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "explorer",
        "sasl_plain_password": "s3cret",
    }
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert [cert["subject"] for cert in context.get_ca_certs()] == [((("commonName", "test CA"),),)]


def test_faststream_gets_the_same_login_as_a_scram_512_security(
    monkeypatch: pytest.MonkeyPatch, cafile: Path
) -> None:
    secure(monkeypatch, cafile, sasl_username="registry", sasl_password="pw")

    security = kafka_security().faststream()

    assert isinstance(security, SASLScram512)
    assert (security.username, security.password, security.use_ssl) == ("registry", "pw", True)
    assert security.ssl_context is not None


@pytest.mark.parametrize(
    ("given", "mechanism", "kind"),
    [
        ("SCRAM-SHA-256", "SCRAM-SHA-256", SASLScram256),
        (" scram-sha-256 ", "SCRAM-SHA-256", SASLScram256),
        ("PLAIN", "PLAIN", SASLPlaintext),
        ("plain", "PLAIN", SASLPlaintext),
        ("SCRAM-SHA-512", "SCRAM-SHA-512", SASLScram512),
        ("", "SCRAM-SHA-512", SASLScram512),  # blank is unset: the default
    ],
)
def test_the_sasl_mechanism_reaches_aiokafka_and_faststream(
    monkeypatch: pytest.MonkeyPatch, given: str, mechanism: str, kind: type
) -> None:
    secure(monkeypatch, sasl_username="registry", sasl_password="pw", sasl_mechanism=given)

    security = kafka_security()

    assert security.client_kwargs()["sasl_mechanism"] == mechanism
    login = security.faststream()
    assert isinstance(login, kind)
    assert (login.username, login.password, login.use_ssl) == ("registry", "pw", True)
    suffix = "" if mechanism == "SCRAM-SHA-512" else f" ({mechanism})"
    assert security.describe() == f"SASL_SSL as 'registry'{suffix}"


def test_an_unknown_sasl_mechanism_names_the_variable_and_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secure(monkeypatch, sasl_username="cli", sasl_password="pw", sasl_mechanism="GSSAPI")
    with pytest.raises(KafkaSecurityError) as raised:
        kafka_security()
    assert str(raised.value) == (
        "KAFKA_SASL_MECHANISM: Input should be 'SCRAM-SHA-512', 'SCRAM-SHA-256' or 'PLAIN'."
    )


def test_a_sasl_mechanism_for_a_plaintext_connection_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKA_SASL_MECHANISM", "PLAIN")
    with pytest.raises(KafkaSecurityError, match=r"KAFKA_SASL_MECHANISM is PLAIN but .* PLAINTEXT"):
        kafka_security()


def test_the_password_may_come_from_a_file_without_its_final_newline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "pw").write_text("from-a-secret\n")
    secure(monkeypatch, sasl_username="cli", sasl_password_file=str(tmp_path / "pw"))

    security = kafka_security()

    assert (security.username, security.password, security.cafile) == ("cli", "from-a-secret", None)


def test_the_protocol_is_read_whatever_its_case(monkeypatch: pytest.MonkeyPatch) -> None:
    secure(monkeypatch, sasl_username="cli", sasl_password="pw")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "sasl_ssl")
    assert kafka_security().secure


def test_the_password_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    secure(monkeypatch, sasl_username="cli", sasl_password="do-not-print")
    security = kafka_security()
    assert "do-not-print" not in repr(security) + security.describe()
    assert security.describe() == "SASL_SSL as 'cli'"


@pytest.mark.parametrize(
    ("variables", "sentence"),
    [
        ({"sasl_password": "pw"}, "KAFKA_SASL_USERNAME is not set"),
        ({"sasl_username": "cli"}, "no password is set for 'cli'"),
        (
            {"sasl_username": "cli", "sasl_password": "a", "sasl_password_file": "/etc/hostname"},
            "Both KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are set",
        ),
        (
            {"sasl_username": "cli", "sasl_password_file": "/nonexistent/pw"},
            "KAFKA_SASL_PASSWORD_FILE /nonexistent/pw cannot be read (No such file or directory)",
        ),
        (
            {"sasl_username": "cli", "sasl_password": "pw", "ssl_cafile": "/nonexistent/ca.crt"},
            "KAFKA_SSL_CAFILE /nonexistent/ca.crt does not exist.",
        ),
        (
            {"sasl_username": "cli", "sasl_password": "pw", "ssl_cafile": "/etc/hostname"},
            "KAFKA_SSL_CAFILE /etc/hostname is not a readable PEM certificate",
        ),
    ],
)
def test_settings_that_cannot_work_are_refused_with_one_sentence(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], sentence: str
) -> None:
    secure(monkeypatch, **variables)
    with pytest.raises(KafkaSecurityError, match=re.escape(sentence)):
        kafka_security()


def test_an_empty_password_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("\n")
    secure(monkeypatch, sasl_username="cli", sasl_password_file=str(tmp_path / "pw"))
    with pytest.raises(KafkaSecurityError, match="is empty"):
        kafka_security()


def test_a_login_for_a_plaintext_connection_is_refused_as_it_would_send_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "cli")
    with pytest.raises(KafkaSecurityError, match="set KAFKA_SECURITY_PROTOCOL=SASL_SSL"):
        kafka_security()


def test_a_ca_file_for_a_plaintext_connection_is_refused_as_it_would_use_no_tls(
    monkeypatch: pytest.MonkeyPatch, cafile: Path
) -> None:
    monkeypatch.setenv("KAFKA_SSL_CAFILE", str(cafile))
    with pytest.raises(KafkaSecurityError, match=r"KAFKA_SSL_CAFILE is set but .* PLAINTEXT"):
        kafka_security()
    monkeypatch.setenv("KAFKA_SSL_CAFILE", "")  # blank is unset, as for every path setting
    assert kafka_security().client_kwargs() == {}


def test_an_unknown_protocol_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SSL")
    with pytest.raises(KafkaSecurityError, match=r"^KAFKA_SECURITY_PROTOCOL: Input should be"):
        kafka_security()


SERVICE = textwrap.dedent(
    """
    from discospace.runtime import ServiceSettings, create_service
    from discospace.runtime.runner import build

    build(lambda: create_service(ServiceSettings(), description="toy"), "toy")
    print("built")
    """
)


def test_a_service_with_bad_security_settings_exits_2_with_one_sentence(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "KAFKA_SASL_USERNAME": "explorer",
        "KAFKA_SASL_PASSWORD": "pw",
        "KAFKA_SSL_CAFILE": str(tmp_path / "missing.crt"),
    }
    result = subprocess.run(
        [sys.executable, "-c", SERVICE], env=env, capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.strip().splitlines() == [
        f"discospace toy cannot start: KAFKA_SSL_CAFILE {tmp_path / 'missing.crt'} does not exist."
    ]


def test_a_service_with_good_security_settings_builds_its_broker_with_them(
    monkeypatch: pytest.MonkeyPatch, cafile: Path
) -> None:
    from discospace.runtime import ServiceSettings, create_service

    secure(monkeypatch, cafile, sasl_username="sampler", sasl_password="pw")
    service = create_service(ServiceSettings(), description="toy")

    options = service.broker._connection_kwargs  # what FastStream connects aiokafka with
    assert (options["security_protocol"], options["sasl_plain_username"]) == ("SASL_SSL", "sampler")
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (options["acks"], options["enable_idempotence"]) == ("all", True)


async def test_a_broker_without_the_mechanism_says_which_variable_to_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What aiokafka raises when the broker's handshake lists other mechanisms (checked on a
    real broker offering SCRAM-SHA-512 only, by hand: no broker here lacks one)."""
    from aiokafka.errors import UnsupportedSaslMechanismError

    from discospace.runtime import security as module

    async def handshake_refused(*args: object, **kwargs: object) -> None:
        raise UnsupportedSaslMechanismError("<AIOKafkaConnection host=h port=1>")

    monkeypatch.setattr(module, "create_conn", handshake_refused)
    security = KafkaSecurity("SASL_SSL", "cli", "pw", None, "SCRAM-SHA-256")
    assert await module.connection_problem("h:1", security) == (
        "Kafka at h:1 does not offer the SASL mechanism SCRAM-SHA-256: set KAFKA_SASL_MECHANISM "
        "to one it does (SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN)."
    )
