"""The ``discospace`` console command: the Typer app, its sub-apps and error handling.

Errors a user can meet (any :class:`DiscospaceError`, or a pydantic validation error) become
one red line on stderr and exit code 2, never a traceback; so do click's usage errors
(`OneLineUsageError`). Commands live in their own modules
(one sub-app per noun: ``space.py``, ``operation.py`` ...) and are registered here.

Start-up stays short (``discospace --help`` and ``discospace operation create --help`` import
typer and the one command module they show, nothing else): each noun is listed from `NOUNS`
(its name and one-line help) and its module is imported only when a command line names it;
the command modules import the domain, the event contracts, Kafka, rich and the projector's
client inside the commands that use them. `tests/test_startup.py` checks both: which modules a
help loads, and that each listed help is its sub-app's own.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer._click.core import Command, Context
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from discospace.cli.logs import silence_library_logs
from discospace.cli.settings import (
    DEFAULT_KAFKA,
    DEFAULT_PROJECTOR,
    DEFAULT_TOPIC_PREFIX,
    CliSettings,
    current_user,
)

USER_ERROR_EXIT_CODE = 2
_CLICK_SIGNALS = (typer.TyperException, typer.Exit, typer.Abort)


@dataclass(frozen=True)
class Noun:
    """A command of the root, imported when a command line names it."""

    module: str
    attribute: str
    help: str

    def load(self) -> Command:
        """The noun's command (a group for a sub-app), built from its module."""
        found = getattr(importlib.import_module(self.module), self.attribute)
        if isinstance(found, typer.Typer):
            return typer.main.get_group(found)
        command_app = typer.Typer(rich_markup_mode=None)
        command_app.command()(found)
        return typer.main.get_command(command_app)


NOUNS: dict[str, Noun] = {
    "space": Noun(
        "discospace.cli.space",
        "space_app",
        "Discovery spaces: describe a space file, register it, list spaces, show entities.",
    ),
    "operation": Noun(
        "discospace.cli.operation",
        "operation_app",
        "Operations: run an operator on a registered space, follow it, cancel it.",
    ),
    "pipeline": Noun(
        "discospace.cli.pipeline",
        "pipeline_app",
        "Pipelines: compare before and after refinement, list trials.",
    ),
    "bench": Noun(
        "discospace.cli.bench",
        "bench_app",
        "Benchmarks that run in process on published measurements.",
    ),
    "store": Noun(
        "discospace.cli.store_import",
        "store_app",
        "Sample stores: import measurements made elsewhere into a store.",
    ),
    "actuators": Noun(
        "discospace.cli.actuators",
        "actuators",
        "List the actuators, the pools they serve and the experiments they offer.",
    ),
}


class _Root(TyperGroup):
    """The root group: lists `NOUNS` without importing them, loads the one a command line
    names, and turns errors a user can meet into one line (every sub-command runs inside its
    ``invoke``, so errors stop here)."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in NOUNS if n not in self.commands)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        found = super().get_command(ctx, cmd_name)
        noun = NOUNS.get(cmd_name)
        if found is not None or noun is None:
            return found
        return TyperGroup(name=cmd_name, help=noun.help)  # listed in help, never run

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name = args[0] if args else None
        if name in NOUNS and name not in self.commands:
            self.add_command(NOUNS[name].load(), name)
        return super().resolve_command(ctx, args)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: Context | None = None,
        **extra: Any,
    ) -> Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except UsageError as error:
            raise _one_line(error) from None

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as error:
            raise _one_line(error) from None
        except _CLICK_SIGNALS:
            raise  # --help, exit codes, bad usage: click answers them itself
        except MemoryError:
            typer.secho(
                "error: the command ran out of memory; nothing more was done: give it less at "
                "once (a smaller file, a smaller limit)",
                fg="red",
                err=True,
            )
            raise typer.Exit(USER_ERROR_EXIT_CODE) from None
        except Exception as error:
            if not _meant_for_the_user(error):
                raise
            from discospace.cli.errors import user_error_line

            typer.secho(user_error_line(error), fg="red", err=True)
            raise typer.Exit(USER_ERROR_EXIT_CODE) from None


class OneLineUsageError(UsageError):
    """A usage error (a missing argument, an unknown option or command, a bad value) as one
    line, `error: <what is wrong> (see '<command> --help')`, like every other error of the CLI
    (click writes the usage and a hint on lines of their own first)."""

    def __init__(self, error: UsageError) -> None:
        # Typer reads choices with pydantic, whose sentence starts "Value error, ".
        super().__init__(error.format_message().replace(": Value error, ", ": "), error.ctx)
        self.exit_code = error.exit_code

    def format_message(self) -> str:
        return self.message

    def show(self, file: Any = None) -> None:
        help_at = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        problem = self.message.rstrip(".") if help_at else self.message
        typer.secho(f"error: {problem}{help_at}", fg="red", err=True, file=file)


def _one_line(error: UsageError) -> UsageError:
    """`error` shown in one line; a bare command that shows its help stays as it is."""
    if isinstance(error, NoArgsIsHelpError | OneLineUsageError):
        return error
    return OneLineUsageError(error)


def _meant_for_the_user(error: Exception) -> bool:
    """A `DiscospaceError` or a pydantic validation error (imported only when one is raised:
    a command that raised one has imported them already)."""
    from pydantic import ValidationError

    from discospace.core.errors import DiscospaceError

    return isinstance(error, DiscospaceError | ValidationError)


app = typer.Typer(
    # Plain click help and usage errors on every app of the CLI: Typer's Rich formatting
    # imports Rich's markdown and console (about 0.15-0.2 s) before any help is shown, which
    # made `operation create --help` take 0.5 s. Rich still draws the tables and progress.
    rich_markup_mode=None,
    name="discospace",
    cls=_Root,
    help="Find the best way to run an ML workload by measuring it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


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
    ] = DEFAULT_TOPIC_PREFIX,
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
