"""Settings: a service's own variables first, then the deployment-wide ones, then defaults."""

from __future__ import annotations

from typing import ClassVar

import pytest
from pydantic import ValidationError
from pydantic_settings import SettingsConfigDict

from discospace.runtime import ServiceSettings
from discospace.runtime.settings import blank_is_unset


class ToySettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_TOY_", extra="ignore")
    service_name: ClassVar[str] = "toy"


def test_defaults_work_on_a_laptop(monkeypatch):
    for name in ("KAFKA_BOOTSTRAP_SERVERS", "DISCOSPACE_TOPIC_PREFIX", "DISCOSPACE_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    settings = ToySettings()
    assert settings.kafka_bootstrap_servers == "127.0.0.1:9092"
    assert settings.topics.spaces == "discospace.spaces"
    assert settings.consumer_group == "discospace.toy"


def test_the_kafka_cluster_can_be_named_once_for_every_service(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka-1:9092,kafka-2:9092")
    monkeypatch.setenv("DISCOSPACE_TOPIC_PREFIX", "staging")
    settings = ToySettings()
    assert settings.kafka_bootstrap_servers == "kafka-1:9092,kafka-2:9092"
    assert settings.consumer_group == "staging.toy"


def test_a_service_variable_wins_over_the_deployment_wide_one(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "shared:9092")
    monkeypatch.setenv("DISCOSPACE_TOY_KAFKA_BOOTSTRAP_SERVERS", "own:9092")
    monkeypatch.setenv("DISCOSPACE_TOY_HTTP_PORT", "9999")
    settings = ToySettings()
    assert (settings.kafka_bootstrap_servers, settings.http_port) == ("own:9092", 9999)


def test_unprefixed_names_of_other_fields_are_not_read(monkeypatch):
    monkeypatch.setenv("HTTP_PORT", "1234")
    assert ToySettings().http_port == 8100


def test_a_bad_value_is_refused_naming_the_field(monkeypatch):
    monkeypatch.setenv("DISCOSPACE_TOY_HTTP_PORT", "seventy")
    with pytest.raises(ValidationError, match="http_port"):
        ToySettings()


@pytest.mark.parametrize(
    "variable", ["DISCOSPACE_TOY_GRACEFUL_TIMEOUT_S", "DISCOSPACE_TOY_METADATA_MAX_AGE_S"]
)
@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_a_number_that_is_not_finite_is_refused(monkeypatch, variable: str, value: str):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError, match="finite number"):
        ToySettings()


@pytest.mark.parametrize(
    ("servers", "wrong"),
    [
        ("host:notaport", "'host:notaport' is not host:port"),
        ("127.0.0.1:99999", "'127.0.0.1:99999' is not host:port"),
        ("a:9092,:9092", "':9092' is not host:port"),
        ("kafka", "'kafka' is not host:port"),
        (" , ", "empty"),
        ("user:s3cretpw@kafka:9092", "'user:***@kafka:9092' is not host:port"),
        ("user:s3cret,pw@kafka:9092", "'user:***@kafka:9092' is not host:port"),  # whole
        ("SSL://kafka:9093", "'SSL://kafka:9093' is not host:port"),
        ("kafka:\u00b2", "'kafka:\u00b2' is not host:port"),  # a digit to str.isdigit: int() failed
        ("kafka:\u0669\u0660\u0669\u0662", "'kafka:\u0669\u0660\u0669\u0662' is not host:port"),
    ],
)
def test_a_bootstrap_address_that_is_not_host_and_port_is_refused(
    monkeypatch, servers: str, wrong: str
):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", servers)
    with pytest.raises(ValidationError) as refused:
        ToySettings()

    [problem] = refused.value.errors()
    assert problem["loc"] == ("kafka_bootstrap_servers",)
    assert str(problem["ctx"]["error"]).startswith(wrong)


@pytest.mark.parametrize("value", ["1e308", "0.0004"])
def test_a_metadata_age_kafka_cannot_take_is_refused(monkeypatch, value: str):
    """1e308 s overflowed into a traceback at start (int(inf)); 0.0004 s became 0 ms: a
    metadata refresh without pause."""
    monkeypatch.setenv("DISCOSPACE_TOY_METADATA_MAX_AGE_S", value)
    with pytest.raises(ValidationError, match="metadata_max_age_s"):
        ToySettings()


def test_a_young_threshold_the_collector_cannot_take_is_refused(monkeypatch):
    monkeypatch.setenv("DISCOSPACE_TOY_GC_YOUNG_THRESHOLD", str(2**31))
    with pytest.raises(ValidationError, match="gc_young_threshold"):
        ToySettings()
    monkeypatch.setenv("DISCOSPACE_TOY_GC_YOUNG_THRESHOLD", str(2**31 - 1))
    assert ToySettings().gc_young_threshold == 2**31 - 1


def test_a_blank_value_is_unset():
    assert [blank_is_unset(v) for v in ("", "  ", "x", None, 3)] == [None, None, "x", None, 3]


def test_the_bootstrap_addresses_are_given_on_without_blanks(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", " kafka-1:9092 , [::1]:9093,")
    assert ToySettings().kafka_bootstrap_servers == "kafka-1:9092,[::1]:9093"


@pytest.mark.parametrize("written", ["", "None", " none "])
def test_the_idle_wait_is_none_when_the_environment_says_so(monkeypatch, written):
    """Its description offers None ('always fetch_max_wait_ms'), which no environment value
    gave: each was refused as not an integer."""
    monkeypatch.setenv("DISCOSPACE_TOY_FETCH_IDLE_WAIT_MS", written)
    assert ToySettings().fetch_idle_wait_ms is None
    monkeypatch.setenv("DISCOSPACE_TOY_FETCH_IDLE_WAIT_MS", "250")
    assert ToySettings().fetch_idle_wait_ms == 250


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DISCOSPACE_TOY_TOPIC_REPLICATION", "40000"),
        ("DISCOSPACE_TOY_TOPIC_PARTITIONS", "3000000000"),
        ("DISCOSPACE_TOY_FETCH_MIN_BYTES", "3000000000"),
    ],
)
def test_a_count_beyond_what_kafka_s_request_holds_is_refused(
    monkeypatch, variable: str, value: str
):
    """Replication is an Int16 in CreateTopics, partitions and fetch bytes Int32: the request
    could not be written, a traceback at start."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError, match="less than or equal to"):
        ToySettings()
