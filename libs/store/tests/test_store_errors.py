"""ClickHouse and chDB errors shortened to the sentence a user needs."""

from __future__ import annotations

import pytest

from discospace.store.errors import reason_of


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (
            "HTTPDriver for http://ch:8123 received ClickHouse error code 516\n"
            " Code: 516. DB::Exception: default: Authentication failed: password is incorrect."
            " (AUTHENTICATION_FAILED) (version 25.8.1.1)",
            "default: Authentication failed: password is incorrect",
        ),
        (
            "Failed to create connection: Code: 36. DB::Exception: "
            "Error initializing EmbeddedServer: . (BAD_ARGUMENTS)",
            "Error initializing EmbeddedServer",
        ),
        (
            "Code: 50. DB::Exception: Unknown data type family: NoSuchType. (UNKNOWN_TYPE)",
            "Unknown data type family: NoSuchType",
        ),
        ("connection refused\nsecond line", "connection refused"),
    ],
)
def test_a_clickhouse_error_reads_as_its_message_alone(raw: str, reason: str) -> None:
    assert reason_of(RuntimeError(raw)) == reason


def test_an_error_without_a_message_reads_as_its_type() -> None:
    assert reason_of(TimeoutError()) == "TimeoutError"
