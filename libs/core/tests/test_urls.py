"""URLs as messages show them."""

import pytest

from discospace.core.urls import redacted_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://alice:hunter2@host:8105/", "http://alice:***@host:8105/"),
        ("http://alice@host", "http://alice@host"),
        ("http://host:8105", "http://host:8105"),
        ("http:/alice:hunter2@host", "http:/alice:***@host"),
        ("alice:hunter2@host", "alice:***@host"),
        ("https://alice:pa/ss@w0rd@host", "https://alice:***@host"),
        (" http://alice:hunter2@host ", "http://alice:***@host"),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted_url(url) == shown
