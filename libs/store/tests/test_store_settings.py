"""Store settings: which store they name, and one-sentence errors for those that name none."""

from __future__ import annotations

from pathlib import Path

import pytest

from discospace.store.client import StoreSettings, connect
from discospace.store.errors import StoreSettingsError


def test_without_a_url_the_store_is_embedded_chdb_in_the_run_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    settings = StoreSettings()
    assert settings.url is None
    assert settings.data_dir == Path(".run/store")
    assert settings.describe() == f"chDB at {Path('.run/store').resolve()} (database discospace)"


def test_clickhouse_url_and_prefixed_settings_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLICKHOUSE_URL", "https://reader:s3cret@ch.example:9443")
    monkeypatch.setenv("DISCOSPACE_STORE_DATABASE", "lab_store")
    settings = StoreSettings()
    assert settings.url == "https://reader:s3cret@ch.example:9443"
    assert (
        settings.describe() == "ClickHouse at https://reader@ch.example:9443 (database lab_store)"
    )


def test_an_empty_clickhouse_url_means_embedded_chdb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLICKHOUSE_URL", "")
    assert StoreSettings().url is None


def test_the_database_comes_from_the_settings_then_the_url_path_then_the_default() -> None:
    url = "http://ch:8123/from_url"
    assert StoreSettings(url=url, database="explicit").describe().endswith("(database explicit)")
    assert StoreSettings(url=url).describe().endswith("(database from_url)")
    assert StoreSettings(url="http://ch:8123").describe().endswith("(database discospace)")


def test_a_url_without_a_port_uses_the_clickhouse_http_ports() -> None:
    assert "http://ch:8123 " in StoreSettings(url="http://ch").describe()
    assert "https://ch:8443 " in StoreSettings(url="https://ch").describe()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("clickhouse://ch:9000", "CLICKHOUSE_URL must start with http:// or https://"),
        ("ch.example:8123", "CLICKHOUSE_URL must start with http:// or https://"),
        ("http://", "names no host"),
        ("http://ch:port", "has a port that is not a number"),
        ("http://ch:8123/bad-name", "must start with a letter or underscore"),
    ],
)
def test_a_bad_url_is_refused_with_one_sentence(url: str, message: str) -> None:
    with pytest.raises(StoreSettingsError, match=message) as caught:
        connect(StoreSettings(url=url))
    assert str(caught.value).count(". ") == 0
    assert str(caught.value).endswith(".")


@pytest.mark.parametrize(
    "url",
    ["ftp://admin:hunter2@ch:21", "http:/admin:hunter2@ch:8123/db", "https//admin:hunter2@ch"],
)
def test_an_error_about_a_url_never_shows_its_password(url: str) -> None:
    """Also written wrongly: with one slash, the password was shown."""
    with pytest.raises(StoreSettingsError) as caught:
        connect(StoreSettings(url=url))
    assert "hunter2" not in str(caught.value)
    assert "admin:***@ch" in str(caught.value)


def test_a_database_name_that_is_not_an_identifier_is_refused() -> None:
    with pytest.raises(StoreSettingsError, match="store database name 'x; DROP'"):
        connect(StoreSettings(url=None, database="x; DROP"))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"url": "not a url"}, "CLICKHOUSE_URL must start with http:// or https://"),
        ({"url": "http://ch:port"}, "has a port that is not a number"),
        ({"url": None, "database": "bad-db!"}, "store database name 'bad-db!'"),
    ],
)
def test_check_refuses_settings_that_name_no_store_before_connecting(settings, message) -> None:
    with pytest.raises(StoreSettingsError, match=message):
        StoreSettings(**settings).check()


def test_check_refuses_a_chdb_data_dir_under_a_file(tmp_path) -> None:
    (tmp_path / "notes").write_text("a file")
    data_dir = tmp_path / "notes" / "store"

    with pytest.raises(StoreSettingsError) as caught:
        StoreSettings(url=None, data_dir=data_dir).check()

    assert str(caught.value) == (
        f"The chDB data dir {data_dir} cannot be made: {tmp_path / 'notes'} is a file, "
        "not a folder."
    )
    assert isinstance(caught.value, ValueError)  # a service's start reports it as a bad setting
    StoreSettings(url=None, data_dir=tmp_path / "new" / "store").check()


@pytest.mark.parametrize(
    "url",
    ["http://alice:s3cr/et@ch.example:8123/db", "http://alice:p/a@ss@ch.example:8123"],
)
def test_a_password_holding_a_slash_is_never_shown_and_the_error_says_to_encode_it(
    url: str,
) -> None:
    """urlsplit ends the host at the '/': the password's start was read as a port, and the
    whole password was shown in the sentence."""
    with pytest.raises(StoreSettingsError) as caught:
        StoreSettings(url=url).check()
    assert "s3cr" not in str(caught.value)
    assert "p/a" not in str(caught.value)
    assert "alice:***@ch.example:8123" in str(caught.value)
    assert "must be percent-encoded: %2F for '/'" in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://default:/Kq9+S3CRET@ch.example:8123",  # a base64 password starting with '/'
        "http://default:2024/S3CRET@ch.example:8123/db",  # digits read as a port
        "http://default:2024?S3CRET@ch.example:8123",
    ],
)
def test_a_password_the_url_parser_reads_as_a_path_is_never_shown(url: str) -> None:
    """urlsplit took the text before the '/' as a port and the rest of the password as the
    path: it was shown as the database name, or the store tried a host named after the user."""
    with pytest.raises(StoreSettingsError) as caught:
        StoreSettings(url=url).check()
    assert "S3CRET" not in str(caught.value)
    assert "default:***@ch.example:8123" in str(caught.value)
    assert "must be percent-encoded: %2F for '/'" in str(caught.value)


def test_an_at_sign_in_a_query_value_is_no_user_info() -> None:
    """The '@' check read the query too, and refused a URL without credentials."""
    StoreSettings(url="http://ch.example:8123/?quota_key=team@corp").check()


def test_credentials_in_the_query_are_refused_and_never_shown() -> None:
    """ClickHouse's own HTTP interface reads ?user=&password=; this client does not: they were
    dropped without a word, and shown whole in the sentences about the URL."""
    url = "https://ch.example:8443/?user=etl&password=S3CRET"
    with pytest.raises(StoreSettingsError) as caught:
        StoreSettings(url=url).check()
    assert str(caught.value) == (
        "CLICKHOUSE_URL 'https://ch.example:8443/?user=etl&password=***' gives its credentials "
        "in the query, which the client does not read: write them as "
        "http://user:password@host:port."
    )


def test_a_chdb_data_dir_holding_a_question_mark_is_refused(tmp_path) -> None:
    """chDB reads what follows '?' as connection options: `q?mode=ro` opened `q`, read-only."""
    data_dir = tmp_path / "q?mode=ro"
    for attempt in (
        lambda: StoreSettings(data_dir=data_dir).check(),
        lambda: connect(StoreSettings(url=None, data_dir=data_dir)),
    ):
        with pytest.raises(StoreSettingsError, match="holds '\\?', which chDB reads as the start"):
            attempt()
    assert list(tmp_path.iterdir()) == []  # neither folder made


def test_a_chdb_data_dir_under_home_is_described_where_it_is_opened(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    described = StoreSettings(url=None, data_dir=Path("~/store")).describe()
    assert described == f"chDB at {tmp_path / 'store'} (database discospace)"


@pytest.mark.parametrize("name", ["system", "INFORMATION_SCHEMA", "_temporary_and_external_tables"])
def test_clickhouses_own_databases_are_refused_as_the_store_database(name: str) -> None:
    """`system` holds a table `events` of its own, which the store took for its events table."""
    with pytest.raises(StoreSettingsError, match=f"'{name}' is one of ClickHouse's own databases"):
        StoreSettings(database=name).check()
