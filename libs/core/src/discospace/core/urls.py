"""URLs as messages show them: never with a password."""

from __future__ import annotations

import re

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/+")


_QUERY_SECRET = re.compile(r"(?i)([?&](?:password|passwd|pwd|token|secret)=)[^&]*")


def redacted_url(url: str) -> str:
    """`url` with the password of its user info replaced by `***` (the user name kept), for
    error messages and logs; one written wrongly (one slash, no scheme, a password holding '/'
    or '@') is masked too: everything from the first ':' of the user info to the last '@'. A
    `password=` (or `token=`, `secret=`) of the query is masked as well."""
    return _QUERY_SECRET.sub(r"\1***", _without_password(url.strip()))  # user info first


def _without_password(text: str) -> str:
    at = text.rfind("@")
    if at < 0:
        return text
    scheme = _SCHEME.match(text)
    start = scheme.end() if scheme else 0
    user, colon, _ = text[start:at].partition(":")
    return f"{text[:start]}{user}:***{text[at:]}" if colon else text
