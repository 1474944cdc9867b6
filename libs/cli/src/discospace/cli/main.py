"""The ``discospace`` console command: the Typer app, its sub-apps and error handling.

Errors a user can meet (any :class:`DiscospaceError`, or a pydantic validation error) become one
red line on stderr and exit code 2, never a traceback. Commands live in their own modules (one
sub-app per noun: ``space.py`` ...) and are registered here.
"""

from typing import Any

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from discospace.cli.errors import user_error_line
from discospace.cli.space import space_app
from discospace.core.errors import DiscospaceError

USER_ERROR_EXIT_CODE = 2


class _UserErrorsToOneLine(TyperGroup):
    """The root group: every sub-command runs inside its ``invoke``, so errors stop here."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (DiscospaceError, ValidationError) as error:
            typer.secho(user_error_line(error), fg="red", err=True)
            raise typer.Exit(USER_ERROR_EXIT_CODE) from None


app = typer.Typer(
    name="discospace",
    cls=_UserErrorsToOneLine,
    help="Find the best way to run an ML workload by measuring it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(space_app, name="space")


def main() -> None:
    """Console entry point (``discospace``)."""
    app(prog_name="discospace")


if __name__ == "__main__":
    main()
