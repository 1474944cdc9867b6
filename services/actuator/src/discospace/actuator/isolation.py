"""Measurements that run code run in a child process, so nothing they do takes the worker down.

An isolated plugin (`isolated = True`, a synchronous `measure_blocking(task)`) is rebuilt in a
fresh child process for every measurement, from its class and its `parameters`. The child is
forked by multiprocessing's fork server (a clean, single-threaded process started once), never
forked from the worker itself, which runs an event loop and Kafka threads.

What the child does becomes an outcome:

- its plugin's result (valid, invalid, transient) passes through (the worker checks it);
- `MemoryError` -> invalid, "out of memory: the measurement exceeded its memory limit of
  300 MiB" (the optional limit, `RLIMIT_AS`, was hit; "out of memory" without a limit): a
  configuration that cannot run within what the pool gives is a finding;
- an exception -> `ChildRaisedError`, which the worker reports as a failure that is not retried;
- a result that cannot come back (it cannot be pickled, or is over `REPLY_LIMIT_BYTES`) ->
  `ChildResultError`, a failure that is not retried: the plugin broke its contract;
- the child dies without an answer (segfault, `os._exit`, killed, the kernel's out-of-memory
  killer) -> `ProcessLost`, a transient failure the explorer retries.

The child raises its own `oom_score_adj` to the maximum, so when the machine runs out of memory
the kernel kills a measurement rather than its worker. It holds a lifeline, the read end of a
pipe whose write end only the worker holds: when the worker dies (even by SIGKILL) the pipe
closes and the child kills itself, so no measurement outlives its worker. Cancelling
`ChildProcessRunner.__call__` (a timeout, a cancelled operation, the worker stopping) kills the
child.

The child leads a process group of its own (a new session), and every kill is of the whole
group: the processes a plugin starts (a data loader, a compiler, `torch.distributed` workers, a
shell) die with its measurement, at a timeout, a cancel, its worker's death, or when the
measurement ends and leaves them behind. A child that dies while a process it forked still holds
its end of the answer pipe is seen at once, by its exit, not at the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import resource
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from discospace.actuator.plugin import (
    IsolatedActuator,
    MeasurementTask,
    Outcome,
    TransientFailure,
    described,
)
from discospace.core import Entity, Experiment, ExperimentSpec
from discospace.core.canonical import Value
from discospace.core.measurement import InvalidMeasurement

OUT_OF_MEMORY = "out of memory"
EXIT_GRACE_S = 5.0
"""How long a child that answered may take to exit before it is killed."""
REPLY_LIMIT_BYTES = 64 * 1024 * 1024
"""The largest (pickled) result a child may send back: far above what fits in an event (1 MiB
by default), so only a runaway result is refused, before the worker reads it."""
MIB = 1024 * 1024


class ProcessLost(TransientFailure):
    """The child process died before it answered: trying again may work."""


class ChildRaisedError(Exception):
    """The plugin raised in its child process; the message is `<type>: <message>`."""


class ChildResultError(Exception):
    """The plugin's result could not come back from its child process; the message says why,
    to follow "returned" ("a result that cannot be sent back ...")."""


def out_of_memory(limit_mb: int | None) -> str:
    """The reason of a measurement that ran out of memory, naming the limit it hit."""
    if limit_mb is None:
        return OUT_OF_MEMORY
    return f"{OUT_OF_MEMORY}: the measurement exceeded its memory limit of {limit_mb} MiB"


@dataclass(frozen=True)
class TaskPayload:
    """A `MeasurementTask` in plain, picklable parts, to rebuild it in the child."""

    request_id: str
    entity_values: dict[str, Value]
    experiment: ExperimentSpec
    parameterization: dict[str, Value]
    attempt: int
    inputs: dict[str, Value] = field(default_factory=dict)

    @classmethod
    def of(cls, task: MeasurementTask) -> TaskPayload:
        return cls(
            task.request_id,
            task.entity.as_dict(),
            task.experiment.experiment.to_spec(),
            dict(task.experiment.parameterization),
            task.attempt,
            dict(task.inputs),
        )

    def to_task(self) -> MeasurementTask:
        experiment = Experiment.from_spec(self.experiment).parameterize(self.parameterization)
        entity = Entity.of(self.entity_values)
        return MeasurementTask(self.request_id, entity, experiment, self.attempt, self.inputs)


@dataclass(frozen=True)
class ChildJob:
    """Everything the child needs: the plugin's class and parameters, the task, the limit."""

    plugin: type[Any]
    parameters: BaseModel
    payload: TaskPayload
    memory_limit_mb: int | None = None


# -- in the child ----------------------------------------------------------------------------


def child_main(job: ChildJob, answer: Connection, lifeline: Connection) -> None:
    """The child process: measure once, send the reply, exit."""
    with contextlib.suppress(OSError):
        os.setsid()  # a group of its own: a kill of the group takes what the plugin started
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the worker's to handle
    threading.Thread(target=_die_with_worker, args=(lifeline,), daemon=True).start()
    _first_to_go_out_of_memory()
    answer.send_bytes(_packed(_reply(job)))
    answer.close()


def _first_to_go_out_of_memory() -> None:
    """Make this process the kernel's first choice when the machine runs out of memory (Linux:
    an unprivileged process may raise its own score), so a measurement dies, not its worker."""
    with contextlib.suppress(OSError):
        Path("/proc/self/oom_score_adj").write_text("1000")


def _packed(reply: tuple[str, Any]) -> bytes:
    """The reply pickled, or a "garbage" reply saying why it cannot go back."""
    try:
        data = pickle.dumps(reply)
    except Exception as error:  # the plugin's result cannot be pickled
        why = f"a result that cannot be sent back from its process ({described(error)})"
        return pickle.dumps(("garbage", why))
    if len(data) > REPLY_LIMIT_BYTES:
        why = (
            f"a result of {len(data) // MIB} MiB from its process, over the "
            f"{REPLY_LIMIT_BYTES // MIB} MiB one may send back"
        )
        return pickle.dumps(("garbage", why))
    return data


def _die_with_worker(lifeline: Connection) -> None:
    """Block on the lifeline; when the worker closes it (or dies), kill this process."""
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv_bytes()
    if os.getpgrp() == os.getpid():  # never the group this process was started in
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _reply(job: ChildJob) -> tuple[str, Any]:
    """("outcome", Outcome) or ("raised", "<type>: <message>")."""
    try:
        plugin: IsolatedActuator = job.plugin(job.parameters)
        task = job.payload.to_task()
        with _memory_limit(job.memory_limit_mb):
            outcome = plugin.measure_blocking(task)
    except MemoryError:
        return ("outcome", InvalidMeasurement(reason=out_of_memory(job.memory_limit_mb)))
    except KeyboardInterrupt:
        raise  # a stop of the process, not the plugin's failure
    except BaseException as error:  # sys.exit(2) from argparse, an SDK's own
        return ("raised", described(error))  # BaseException: as in process, final
    return ("outcome", outcome)


@contextmanager
def _memory_limit(limit_mb: int | None) -> Iterator[None]:
    """Limit this process's address space to `limit_mb` (the soft limit) while measuring; the
    limit is lifted after, so the reply can always be sent."""
    if limit_mb is None:
        yield
        return
    before = resource.getrlimit(resource.RLIMIT_AS)
    wanted = limit_mb * 1024 * 1024
    hard = before[1]
    soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)


def _noop() -> None:
    """A child that does nothing: starting one warms the fork server up."""


# -- in the worker ---------------------------------------------------------------------------


def process_context() -> BaseContext:
    """The fork server where the platform has one, else spawn; never a fork of the worker."""
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # Children fork from a server that imported only this module (pydantic, discospace.core);
        # each child imports its plugin's module itself, so a plugin may set up its libraries
        # (threads, devices) as it likes.
        context.set_forkserver_preload([__name__])
    return context


class ChildProcessRunner:
    """Runs an isolated plugin's `measure_blocking` in a child process per measurement."""

    def __init__(
        self,
        actuator: IsolatedActuator,
        memory_limit_mb: int | None = None,
        context: BaseContext | None = None,
    ) -> None:
        self.actuator = actuator
        self.memory_limit_mb = memory_limit_mb
        self.context = context or process_context()

    async def warm_up(self) -> None:
        """Start the fork server now (a no-op child), not at the first measurement."""
        process = self.context.Process(target=_noop, daemon=True)  # type: ignore[attr-defined]
        await asyncio.to_thread(_start_and_join, process)

    async def __call__(self, task: MeasurementTask) -> Outcome:
        """The child's outcome; raises `ChildRaisedError` when the plugin raised."""
        job = ChildJob(
            type(self.actuator),
            self.actuator.parameters,
            TaskPayload.of(task),
            self.memory_limit_mb,
        )
        opened: list[Connection] = []
        try:
            answers, answer_end = self.context.Pipe(duplex=False)
            opened += [answers, answer_end]
            lifeline_end, lifeline = self.context.Pipe(duplex=False)
            opened += [lifeline_end, lifeline]
            process: BaseProcess = self.context.Process(  # type: ignore[attr-defined]
                target=child_main,
                args=(job, answer_end, lifeline_end),
                name=f"measure-{task.request_id}",
                daemon=True,
            )
            process.start()
        except (OSError, EOFError) as error:  # the worker's: no pipe, no fork (no file left)
            for end in opened:
                end.close()
            _restart_fork_server(self.context)
            reason = f"the worker could not start the measurement's process ({described(error)})"
            return TransientFailure(reason)
        try:
            answer_end.close()
            lifeline_end.close()
            reply = await _receive(answers, process)
            await _exited(process, EXIT_GRACE_S)
        finally:
            lifeline.close()
            answers.close()
            _kill(process)
        return _outcome(reply, process.exitcode)


def _restart_fork_server(context: BaseContext) -> None:
    """Stop the fork server after a start failed on it: one whose connection broke halfway
    (too many open files) died, and every later start was refused by its address; the next
    start makes a new one."""
    if context.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)
    if stop is None:
        return
    with contextlib.suppress(OSError):
        stop()


def _start_and_join(process: BaseProcess) -> None:
    process.start()
    process.join()


def _resolve(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


async def _readable(*fds: int) -> None:
    """Wait until one of `fds` can be read (data, or end of file)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    for fd in fds:
        loop.add_reader(fd, _resolve, ready)
    try:
        await ready
    finally:
        for fd in fds:
            loop.remove_reader(fd)


async def _receive(answers: Connection, process: BaseProcess) -> tuple[str, Any] | None:
    """The child's reply, or None when it died without one.

    Waits for the reply or the child's exit, whichever comes first: a process the child forked
    may hold the pipe open after the child died. Once the child has exited, its group is killed
    before the pipe is read, so the read meets the whole reply or the end of the pipe, never a
    writer still alive.
    """
    await _readable(answers.fileno(), process.sentinel)
    if not answers.poll(0):
        _kill_group(process)
    try:
        data = answers.recv_bytes(REPLY_LIMIT_BYTES)
    except EOFError:
        return None
    except OSError as error:  # over the limit (the child checks it first), or a broken pipe
        return ("garbage", f"a reply the worker cannot take from its process ({error})")
    try:
        reply: tuple[str, Any] = pickle.loads(data)
    except Exception as error:  # e.g. a class the worker cannot import
        return ("garbage", f"a result the worker cannot read back ({described(error)})")
    return reply


async def _exited(process: BaseProcess, grace_s: float) -> None:
    """Wait up to `grace_s` for the child to exit by itself."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_readable(process.sentinel), grace_s)


def _kill(process: BaseProcess) -> None:
    """Kill the child's group (the child, if it still runs, and what it started), and collect
    its exit status."""
    if process.pid is None:
        return
    _kill_group(process)
    if process.exitcode is None:
        process.kill()
    process.join(timeout=EXIT_GRACE_S)


def _kill_group(process: BaseProcess) -> None:
    """SIGKILL the process group the child leads (its id is the child's pid).

    Before the child made its group, or once nothing of it is left, there is no such group and
    this does nothing; it cannot reach the worker's group, whose id is not the child's pid.
    """
    if process.pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _outcome(reply: tuple[str, Any] | None, exitcode: int | None) -> Outcome:
    if reply is None:
        return ProcessLost(f"the measurement process died without a result ({_death(exitcode)})")
    kind, content = reply
    if kind == "raised":
        raise ChildRaisedError(content)
    if kind == "garbage":
        raise ChildResultError(content)
    outcome: Outcome = content
    return outcome


def _death(exitcode: int | None) -> str:
    """`killed by signal SIGSEGV`, `exit status 3`."""
    if exitcode is None:
        return "exit status unknown"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"
