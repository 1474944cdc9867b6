"""A service reaches every address of a comma-separated KAFKA_BOOTSTRAP_SERVERS."""

from discospace.runtime.service import _broker, bootstrap_addresses
from discospace.runtime.settings import ServiceSettings


def test_a_list_of_addresses_is_split_and_trimmed() -> None:
    assert bootstrap_addresses("a:1, b:2 ,c:3,") == ["a:1", "b:2", "c:3"]
    assert bootstrap_addresses("127.0.0.1:9092") == ["127.0.0.1:9092"]


def test_the_service_broker_is_given_every_address() -> None:
    """FastStream takes one string as one address (the chaos cluster run could not start)."""
    broker = _broker(ServiceSettings(kafka_bootstrap_servers="127.0.0.1:1,127.0.0.1:2"), "")
    assert list(broker._connection_kwargs["bootstrap_servers"]) == ["127.0.0.1:1", "127.0.0.1:2"]
