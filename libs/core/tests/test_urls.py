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
        ("http://host/?user=a&password=hunter2&x=1", "http://host/?user=a&password=***&x=1"),
        ("http://host/?TOKEN=hunter2#top", "http://host/?TOKEN=***"),  # to the next '&'
        ("http://host/?password=a;b#c&x=1", "http://host/?password=***&x=1"),
        # the user info first: a password holding ';token=' hid the '@' from it
        (
            "http://admin:Xk9;token=7Qw@db.example:8123/prod",
            "http://admin:***@db.example:8123/prod",
        ),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted_url(url) == shown
