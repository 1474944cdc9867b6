"""Kafka security: from the `KAFKA_*` settings to what every client is built with.

- `kafka_security()`: this process's settings (`settings.KafkaSecuritySettings`), checked: a
  SASL_SSL login needs a user and one password, a CA file must be readable, a user or a SASL
  mechanism given for a PLAINTEXT connection (which would send no login) or a CA file for one
  (which uses no TLS) is a mistake; each is a `KafkaSecurityError` with one sentence (a
  service exits 2 with it, the CLI prints it).
- `KafkaSecurity.client_kwargs()`: the keyword arguments of an aiokafka producer, consumer or
  admin client (`security_protocol`, `sasl_mechanism`, `sasl_plain_username`/`password`,
  `ssl_context`); `client_kwargs(security)` is the shorthand every construction site calls.
- `KafkaSecurity.faststream()`: the same for FastStream's `KafkaBroker(security=...)`.
- `connection_problem(...)`: when a client could not connect, whether security is why (a
  refused login, an untrusted certificate, TLS on one side only), as a sentence; aiokafka
  itself only says it could not bootstrap. `KafkaLoginError` carries that sentence.

Every construction site takes an optional `security`; None means this process's settings,
read from the environment each time (cheap; tests change it with monkeypatch).
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka.conn import create_conn
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
)
from aiokafka.helpers import create_ssl_context
from faststream.security import SASLPlaintext, SASLScram256, SASLScram512
from pydantic import ValidationError

from discospace.core.errors import DiscospaceError
from discospace.runtime.settings import (
    SASL_MECHANISM,
    KafkaSecuritySettings,
    SaslMechanism,
    SecurityProtocol,
)

PROBE_TIMEOUT_S = 10.0


class KafkaSecurityError(DiscospaceError):
    """The Kafka security settings cannot work; the message names the variable to fix."""


class KafkaLoginError(KafkaConnectionError):
    """Kafka could not be reached for a reason of security (login, certificate, TLS);
    `sentence` says which, for a person."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


@dataclass(frozen=True)
class KafkaSecurity:
    """Checked settings of one principal: how to connect, as whom."""

    protocol: SecurityProtocol = "PLAINTEXT"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    cafile: Path | None = None
    mechanism: SaslMechanism = SASL_MECHANISM

    @property
    def secure(self) -> bool:
        return self.protocol == "SASL_SSL"

    def ssl_context(self) -> ssl.SSLContext:
        """TLS that checks the broker's certificate (and its name) against the CA file, or
        the system's CAs when none is given."""
        cafile = str(self.cafile) if self.cafile else None
        return create_ssl_context(cafile=cafile)

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `AIOKafkaProducer`, `AIOKafkaConsumer`, `AIOKafkaAdminClient`."""
        if not self.secure:
            return {}
        return {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": self.mechanism,
            "sasl_plain_username": self.username,
            "sasl_plain_password": self.password,
            "ssl_context": self.ssl_context(),
        }

    def faststream(self) -> SASLScram512 | SASLScram256 | SASLPlaintext | None:
        """`KafkaBroker(security=...)`: None for plaintext."""
        if not self.secure:
            return None
        kind = _FASTSTREAM[self.mechanism]
        return kind(
            username=self.username or "",
            password=self.password or "",
            ssl_context=self.ssl_context(),
            use_ssl=True,
        )

    def describe(self) -> str:
        """`SASL_SSL as 'explorer'` (with the mechanism when it is not the default) or
        `PLAINTEXT`, for messages (never the password)."""
        if not self.secure:
            return "PLAINTEXT"
        how = "" if self.mechanism == SASL_MECHANISM else f" ({self.mechanism})"
        return f"SASL_SSL as '{self.username}'{how}"


_FASTSTREAM: dict[SaslMechanism, type[SASLScram512 | SASLScram256 | SASLPlaintext]] = {
    "SCRAM-SHA-512": SASLScram512,
    "SCRAM-SHA-256": SASLScram256,
    "PLAIN": SASLPlaintext,
}


def kafka_security(settings: KafkaSecuritySettings | None = None) -> KafkaSecurity:
    """This process's Kafka security (or that of `settings`), checked; `KafkaSecurityError`
    with one sentence when it cannot work."""
    try:
        given = settings or KafkaSecuritySettings()
    except ValidationError as error:
        raise KafkaSecurityError(_setting_problem(error)) from None
    if given.security_protocol == "PLAINTEXT":
        return _plaintext(given)
    return KafkaSecurity(
        "SASL_SSL",
        _username(given),
        _password(given),
        _cafile(given.ssl_cafile),
        given.sasl_mechanism or SASL_MECHANISM,
    )


def client_kwargs(security: KafkaSecurity | None = None) -> dict[str, Any]:
    """The security keyword arguments of an aiokafka client: of `security`, or this process's."""
    return (security or kafka_security()).client_kwargs()


def _setting_problem(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    name = "KAFKA_" + "_".join(str(part) for part in first["loc"]).upper()
    return f"{name}: {first['msg']}."


def _plaintext(given: KafkaSecuritySettings) -> KafkaSecurity:
    if given.sasl_username or given.sasl_password or given.sasl_password_file:
        raise KafkaSecurityError(
            "KAFKA_SASL_USERNAME or a password is set but KAFKA_SECURITY_PROTOCOL is PLAINTEXT, "
            "which sends no login: set KAFKA_SECURITY_PROTOCOL=SASL_SSL, or unset them."
        )
    if given.sasl_mechanism is not None:
        raise KafkaSecurityError(
            f"KAFKA_SASL_MECHANISM is {given.sasl_mechanism} but KAFKA_SECURITY_PROTOCOL is "
            "PLAINTEXT, which sends no login: set KAFKA_SECURITY_PROTOCOL=SASL_SSL, or unset it."
        )
    if given.ssl_cafile is not None:
        raise KafkaSecurityError(
            "KAFKA_SSL_CAFILE is set but KAFKA_SECURITY_PROTOCOL is PLAINTEXT, which uses no "
            "TLS: set KAFKA_SECURITY_PROTOCOL=SASL_SSL, or unset it."
        )
    return KafkaSecurity()


def _username(given: KafkaSecuritySettings) -> str:
    if not given.sasl_username:
        raise KafkaSecurityError(
            "KAFKA_SECURITY_PROTOCOL is SASL_SSL but KAFKA_SASL_USERNAME is not set: name the "
            "principal to log in as (deploy/local/kafka.sh writes <state>/credentials/*.env)."
        )
    return given.sasl_username


def _password(given: KafkaSecuritySettings) -> str:
    if given.sasl_password is not None and given.sasl_password_file is not None:
        raise KafkaSecurityError(
            "Both KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are set: give only one."
        )
    if given.sasl_password_file is not None:
        return _read_password(given.sasl_password_file)
    if given.sasl_password is None or not given.sasl_password.get_secret_value():
        raise KafkaSecurityError(
            f"KAFKA_SECURITY_PROTOCOL is SASL_SSL but no password is set for "
            f"'{given.sasl_username}': set KAFKA_SASL_PASSWORD_FILE (or KAFKA_SASL_PASSWORD)."
        )
    return given.sasl_password.get_secret_value()


def _read_password(path: Path) -> str:
    try:
        password = path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise KafkaSecurityError(
            f"KAFKA_SASL_PASSWORD_FILE {path} cannot be read ({reason})."
        ) from None
    if not password:
        raise KafkaSecurityError(f"KAFKA_SASL_PASSWORD_FILE {path} is empty.")
    return password


def _cafile(path: Path | None) -> Path | None:
    if path is None:
        return None
    try:
        create_ssl_context(cafile=str(path))
    except FileNotFoundError:
        raise KafkaSecurityError(f"KAFKA_SSL_CAFILE {path} does not exist.") from None
    except (OSError, ssl.SSLError) as error:
        reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or error
        raise KafkaSecurityError(
            f"KAFKA_SSL_CAFILE {path} is not a readable PEM certificate ({reason})."
        ) from None
    return path


async def connection_problem(
    bootstrap_servers: str, security: KafkaSecurity | None = None
) -> str | None:
    """Why a client of `security` cannot connect to the first of `bootstrap_servers`, when
    security is the reason: a sentence; None when it connects, or fails for another reason
    (nothing listens, a timeout), which the caller reports as it always did."""
    security = security or kafka_security()
    host, _, port = bootstrap_servers.split(",")[0].strip().rpartition(":")
    where = f"Kafka at {bootstrap_servers}"
    try:
        connection = await asyncio.wait_for(
            create_conn(host.strip("[]"), int(port), **security.client_kwargs()),
            PROBE_TIMEOUT_S,
        )
    except UnsupportedSaslMechanismError:
        return _mechanism_refused(where, security)
    except SaslAuthenticationFailed:
        return (
            f"{where} refused the login of '{security.username}' ({security.mechanism}): check "
            "KAFKA_SASL_USERNAME, its password and KAFKA_SASL_MECHANISM."
        )
    except ssl.SSLCertVerificationError as error:
        return (
            f"{where} showed a certificate this client does not trust ({error.verify_message}): "
            "set KAFKA_SSL_CAFILE to the CA that signed it."
        )
    except ssl.SSLError as error:
        return (
            f"{where} did not answer in TLS ({error.reason}): is it a PLAINTEXT listener? "
            "Then set KAFKA_SECURITY_PROTOCOL=PLAINTEXT."
        )
    except KafkaConnectionError as error:
        return _plaintext_refused(where, security, error)
    except (KafkaError, OSError, ValueError, TimeoutError):
        return None
    connection.close()
    return None


def _mechanism_refused(where: str, security: KafkaSecurity) -> str:
    """A broker that does not offer the mechanism asked for (aiokafka's error does not keep
    the ones it offers)."""
    return (
        f"{where} does not offer the SASL mechanism {security.mechanism}: set "
        "KAFKA_SASL_MECHANISM to one it does (SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN)."
    )


def _plaintext_refused(
    where: str, security: KafkaSecurity, error: KafkaConnectionError
) -> str | None:
    """A plaintext request that the broker answers by closing the connection: a TLS listener
    reads it as a broken handshake and hangs up (a port with nothing on it refuses instead)."""
    if security.secure or not isinstance(error.__cause__, asyncio.IncompleteReadError):
        return None
    return (
        f"{where} closed a PLAINTEXT connection: it may want TLS and a login; set "
        "KAFKA_SECURITY_PROTOCOL=SASL_SSL with KAFKA_SASL_USERNAME, its password and "
        "KAFKA_SSL_CAFILE."
    )


async def login_error(bootstrap_servers: str, security: KafkaSecurity | None = None) -> None:
    """Raise `KafkaLoginError` when security is why a client cannot connect; else return."""
    problem = await connection_problem(bootstrap_servers, security)
    if problem is not None:
        raise KafkaLoginError(problem)
