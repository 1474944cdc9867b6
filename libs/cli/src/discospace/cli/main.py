"""The ``discospace`` console command: the Typer app, its sub-apps and error handling.

Errors a user can meet (any :class:`DiscospaceError`, or a pydantic validation error) become
one red line on stderr and exit code 2, never a traceback. Commands live in their own modules
(one sub-app per noun: ``space.py``, ``operation.py`` ...) and are registered here.
"""

from typing import Annotated, Any

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from discospace.cli.actuators import actuators
from discospace.cli.bench import bench_app
from discospace.cli.errors import user_error_line
from discospace.cli.kafka import silence_library_logs
from discospace.cli.operation import operation_app
from discospace.cli.pipeline import pipeline_app
from discospace.cli.settings import DEFAULT_KAFKA, DEFAULT_PROJECTOR, CliSettings, current_user
from discospace.cli.space import space_app
from discospace.cli.store_import import store_app
from discospace.core.errors import DiscospaceError
from discospace.events.topics import DEFAULT_PREFIX

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
app.add_typer(operation_app, name="operation")
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(bench_app, name="bench")
app.add_typer(store_app, name="store")
app.command("actuators")(actuators)


@app.callback()
def connection(
    ctx: typer.Context,
    kafka: Annotated[
        str,
        typer.Option("--kafka", envvar="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers."),
    ] = DEFAULT_KAFKA,
    topic_prefix: Annotated[
        str,
        typer.Option(
            "--topic-prefix", envvar="DISCOSPACE_TOPIC_PREFIX", help="Prefix of every topic."
        ),
    ] = DEFAULT_PREFIX,
    projector: Annotated[
        str,
        typer.Option(
            "--projector", envvar="DISCOSPACE_PROJECTOR_URL", help="URL of the projector."
        ),
    ] = DEFAULT_PROJECTOR,
) -> None:
    """Find the best way to run an ML workload by measuring it."""
    silence_library_logs()
    ctx.obj = CliSettings(kafka, topic_prefix, projector, current_user())


def main() -> None:
    """Console entry point (``discospace``)."""
    app(prog_name="discospace")


if __name__ == "__main__":
    main()
