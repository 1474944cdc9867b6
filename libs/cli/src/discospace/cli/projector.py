"""The projector, as the CLI reads it: ``discospace.client`` with its errors made CLI errors.

The client (and pandas behind it) is imported only by the commands that read views, so the
commands that only publish start fast.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from discospace.cli.errors import CliError
from discospace.cli.settings import CliSettings

if TYPE_CHECKING:
    from discospace.client import Client


@contextmanager
def projector_client(settings: CliSettings) -> Iterator["Client"]:
    """A client of the projector at ``settings.projector_url``; its errors become one line."""
    from discospace.client import Client, ClientError

    try:
        with Client(settings.projector_url) as client:
            yield client
    except ClientError as error:
        raise CliError(str(error)) from None
