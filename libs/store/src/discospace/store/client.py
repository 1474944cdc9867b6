"""One way to reach the store: a ClickHouse server over HTTP(S), or embedded chDB by default.

`connect(settings)` returns a clickhouse-connect `Client` whose default database exists and is
selected, so the same SQL runs on both backends. Imports of clickhouse-connect and chDB stay inside
the functions that need them, so importing the settings is cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from discospace.core.urls import redacted_url
from discospace.store._chdb import open_chdb, refuse_query_in_path
from discospace.store.errors import (
    StoreError,
    StoreSettingsError,
    StoreUnreachableError,
    reason_of,
)

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

DEFAULT_DATABASE = "discospace"
_DATABASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_DEFAULT_PORTS = {"http": 8123, "https": 8443}
_UNREACHABLE_REASONS = (
    ("Connection refused", "connection refused"),
    ("Failed to resolve", "host name not found"),
    ("Name or service not known", "host name not found"),
    ("timed out", "timed out"),
    ("Remote end closed", "the server closed the connection without an HTTP answer"),
    ("Connection reset", "the server reset the connection"),
    ("SSL", "TLS handshake failed"),
)


class StoreSettings(BaseSettings):
    """Where the store lives.

    `CLICKHOUSE_URL` (http or https, optionally with user, password and database) points at a
    ClickHouse server or cluster; without it the store is embedded chDB in `data_dir`.
    """

    model_config = SettingsConfigDict(
        env_prefix="DISCOSPACE_STORE_",
        env_ignore_empty=True,
        extra="ignore",
        validate_by_name=True,
        allow_inf_nan=False,
    )

    url: str | None = Field(
        default=None,
        validation_alias="CLICKHOUSE_URL",
        description="ClickHouse server URL; unset means embedded chDB.",
        examples=["http://default:secret@clickhouse:8123/discospace"],
    )
    data_dir: Path = Field(
        default=Path(".run/store"),
        description="chDB data directory (relative to the current directory unless absolute).",
    )
    database: str | None = Field(
        default=None,
        description="Database of the store tables; else the URL path's; else 'discospace'.",
    )
    connect_timeout_s: float = Field(default=5.0, gt=0, description="Server connect timeout.")

    def check(self) -> None:
        """Raise `StoreSettingsError` now when these settings cannot name a store (the URL, the
        database name, a chDB data dir under a file), before anything connects."""
        if self.url is not None:
            _parse_server_url(self.url, self.database)
            return
        _checked_database(self.database or DEFAULT_DATABASE)
        refuse_query_in_path(self.data_dir)
        existing = self.data_dir.expanduser()
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise StoreSettingsError(
                f"The chDB data dir {self.data_dir} cannot be made: {existing} is a file, "
                "not a folder."
            )

    def describe(self) -> str:
        """Where this store is, for logs and health pages (never shows a password)."""
        if self.url is None:
            return (
                f"chDB at {self.data_dir.expanduser().resolve()} "
                f"(database {self.database or DEFAULT_DATABASE})"
            )
        target = _parse_server_url(self.url, self.database)
        return f"ClickHouse at {target.redacted} (database {target.database})"


@dataclass(frozen=True)
class ServerTarget:
    """A ClickHouse server URL taken apart and checked."""

    interface: str
    host: str
    port: int
    username: str | None
    password: str
    database: str

    @property
    def redacted(self) -> str:
        user = f"{self.username}@" if self.username else ""
        return f"{self.interface}://{user}{self.host}:{self.port}"


def connect(settings: StoreSettings | None = None) -> Client:
    """A client on the configured store with its database created (if missing) and selected."""
    settings = settings or StoreSettings()
    if settings.url is None:
        database = _checked_database(settings.database or DEFAULT_DATABASE)
        client = open_chdb(settings.data_dir)
    else:
        target = _parse_server_url(settings.url, settings.database)
        database = target.database
        client = _open_server(target, settings.connect_timeout_s)
    try:
        _ensure_database(client, database)
    except Exception:
        client.close()
        raise
    client.database = database
    return client


_RESERVED_DATABASES = frozenset({"system", "information_schema", "_temporary_and_external_tables"})
"""ClickHouse's own databases: `system` holds a table `events` of its own, which the store
then took for its events table (every write failed)."""


def _checked_database(name: str) -> str:
    if not _DATABASE_NAME.match(name):
        raise StoreSettingsError(
            f"The store database name {name!r} must start with a letter or underscore and hold "
            "only letters, digits and underscores (64 at most)."
        )
    if name.lower() in _RESERVED_DATABASES:
        raise StoreSettingsError(
            f"The store database name {name!r} is one of ClickHouse's own databases: choose "
            "another (the default is discospace)."
        )
    return name


def _parse_server_url(url: str, database: str | None) -> ServerTarget:
    parts = _split_url(url)
    path_database = unquote(parts.path.strip("/"))
    return ServerTarget(
        interface=parts.scheme,
        host=parts.hostname or "",
        port=_url_port(parts, url),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password or ""),
        database=_checked_database(database or path_database or DEFAULT_DATABASE),
    )


_ENCODE_HINT = (
    "a user name or password holding '/', '?', '#', '@' or ':' must be percent-encoded: %2F for '/'"
)


def _split_url(url: str) -> SplitResult:
    parts = urlsplit(url.strip())
    if parts.scheme not in _DEFAULT_PORTS:
        raise StoreSettingsError(
            f"CLICKHOUSE_URL must start with http:// or https://, got {redacted_url(url)!r}."
        )
    if not parts.hostname:
        raise StoreSettingsError(f"CLICKHOUSE_URL {redacted_url(url)!r} names no host.")
    bare = [part for part in parts.query.split("&") if "=" not in part]
    if "@" in parts.path + parts.fragment + "&".join(bare):
        # the user info ended early ('/', '?' or '#' in the password): read as path, query or
        # fragment; an '@' in a query's value (quota_key=team@corp) is no user info
        raise StoreSettingsError(
            f"CLICKHOUSE_URL {redacted_url(url)!r} has an '@' after its host ({_ENCODE_HINT})."
        )
    if {"user", "password"} & {key.lower() for key, _ in parse_qsl(parts.query)}:
        raise StoreSettingsError(
            f"CLICKHOUSE_URL {redacted_url(url)!r} gives its credentials in the query, which "
            "the client does not read: write them as http://user:password@host:port."
        )
    return parts


def _url_port(parts: SplitResult, url: str) -> int:
    try:
        return parts.port or _DEFAULT_PORTS[parts.scheme]
    except ValueError:
        hint = f" ({_ENCODE_HINT})" if "@" in url else ""
        raise StoreSettingsError(
            f"CLICKHOUSE_URL {redacted_url(url)!r} has a port that is not a number from 0 to "
            f"65535{hint}."
        ) from None


def _open_server(target: ServerTarget, timeout_s: float) -> Client:
    import clickhouse_connect
    from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

    try:
        return clickhouse_connect.get_client(
            interface=target.interface,
            host=target.host,
            port=target.port,
            username=target.username,
            password=target.password,
            connect_timeout=timeout_s,
            tz_mode="aware",
        )
    except OperationalError as error:
        raise StoreUnreachableError(
            f"Cannot reach ClickHouse at {target.redacted}: {unreachable_reason(error)}."
        ) from error
    except DatabaseError as error:
        raise StoreError(
            f"ClickHouse at {target.redacted} refused the connection: {reason_of(error)}."
        ) from error


def unreachable_reason(error: Exception) -> str:
    """Why no ClickHouse server answered, in words, from the error and its causes."""
    text = " ".join(str(e) for e in _error_chain(error))
    for needle, reason in _UNREACHABLE_REASONS:
        if needle in text:
            return reason
    return "no ClickHouse server answered"


def _error_chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _ensure_database(client: Client, database: str) -> None:
    """Create the database unless it exists (checked first: a user may lack CREATE rights)."""
    from clickhouse_connect.driver.exceptions import Error

    parameters = {"database": database}
    try:
        exists = client.command(
            "SELECT count() FROM system.databases WHERE name = {database:String}",
            parameters=parameters,
            use_database=False,
        )
        if not exists:
            client.command(
                "CREATE DATABASE IF NOT EXISTS {database:Identifier}",
                parameters=parameters,
                use_database=False,
            )
    except Error as error:
        raise StoreError(
            f"Cannot create the store database {database}: {reason_of(error)}."
        ) from error
