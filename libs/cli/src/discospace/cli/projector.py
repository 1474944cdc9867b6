"""The projector, as the CLI reads it: ``discospace.client`` with its errors made CLI errors.

The client is imported only by the commands that read views, so the commands that only publish
start fast. ``projector_catalog`` is the one read that may fail quietly: ``space describe``
works offline and only borrows the actuators' catalogs when the projector answers.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from discospace.cli.errors import CliError
from discospace.cli.settings import CliSettings
from discospace.core.errors import DiscospaceError
from discospace.core.experiment import ExperimentCatalog
from discospace.core.urls import redacted_url

CATALOG_TIMEOUT_S = 2.0

if TYPE_CHECKING:
    from discospace.client import Client


@contextmanager
def projector_client(settings: CliSettings) -> Iterator["Client"]:
    """A client of the projector at ``settings.projector_url``; its errors become one line."""
    from discospace.client import Client, ClientError

    try:
        with Client(settings.projector_url, **_token(settings)) as client:
            yield client
    except ClientError as error:
        raise CliError(str(error)) from None


def projector_catalog(
    settings: CliSettings, timeout_s: float = CATALOG_TIMEOUT_S
) -> ExperimentCatalog | str:
    """Every experiment the actuators announced, as the projector serves them; else the
    sentence saying why there is none (not answering, an invalid URL, a token refused, a
    catalog the core refuses)."""
    from discospace.client import Client, ClientError

    try:
        with Client(settings.projector_url, timeout_s=timeout_s, **_token(settings)) as client:
            pools = client.actuators()
        return ExperimentCatalog(spec for pool in pools for spec in pool.experiments)
    except ClientError as error:
        return str(error).rstrip(".")
    except DiscospaceError as error:
        url = redacted_url(settings.projector_url)
        return f"the projector at {url} serves a catalog the core refuses ({error})"


def _token(settings: CliSettings) -> dict[str, str]:
    """The client's `token` argument when the CLI has one (`DISCOSPACE_API_TOKEN`); none
    otherwise, so a projector without a token is asked as before."""
    return {"token": settings.api_token} if settings.api_token else {}
