"""The --watch progress loop, fed by a scripted progress source (no projector needed)."""

import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rich.console import Console

from discospace.cli.errors import CliError
from discospace.cli.watch import UNSEEN_GRACE_S, best_text, ending, follow, progress_rows
from discospace.client import BestSoFar, OperationCounts, OperationProgress, OperatorChoice


def progress(
    status: str, requested: int, measured: int, reused: int = 0, failed: int = 0, **more: Any
) -> OperationProgress:
    counts = OperationCounts(
        requested=requested,
        measured=measured,
        reused=reused,
        failed=failed,
        in_flight=requested - measured - reused - failed,
    )
    done = measured + reused + failed
    return OperationProgress(operation_id="op-1", status=status, counts=counts, done=done, **more)


BEST = BestSoFar(property="train_tokens_per_second", direction="max", value=4210.5, entity_id="e1")


def run_follow(answers: Iterator[Any]) -> tuple[OperationProgress, str, list[float]]:
    out = io.StringIO()
    sleeps: list[float] = []
    final = follow(lambda: next(answers), 0.5, Console(file=out, width=200), sleeps.append)
    return final, out.getvalue(), sleeps


def test_watching_polls_until_the_operation_has_ended_and_returns_how_it_ended() -> None:
    answers = iter(
        [
            None,
            progress("running", 8, 2, total=80),
            progress("running", 80, 40, reused=10, failed=1, total=80, best=BEST),
            progress(
                "completed", 80, 75, reused=4, failed=1, total=80, best=BEST,
                stop_reason="requested_entities_measured",
                stop_detail="80 of 80 requested entities measured",
            ),
            progress("never read", 0, 0),
        ]
    )  # fmt: skip
    final, shown, sleeps = run_follow(answers)

    assert (final.status, final.done, final.counts.failed, final.counts.reused) == (
        "completed",
        80,
        1,
        4,
    )
    assert ending(final) == "80 of 80 requested entities measured"
    assert sleeps == [0.5, 0.5, 0.5]
    assert "80/80" in shown
    assert "best train_tokens_per_second=4210.5" in shown
    assert "failed 1  reused 4" in shown


def test_without_a_total_the_bar_counts_against_what_was_requested_so_far() -> None:
    _, shown, _ = run_follow(iter([progress("completed", 6, 5, failed=1)]))
    assert "6/6" in shown


def test_a_request_in_flight_at_the_stop_shows_as_cancelled_not_failed_nor_done() -> None:
    counts = OperationCounts(requested=41, measured=40, cancelled=1)
    stopped = OperationProgress(
        operation_id="op-1", status="completed", counts=counts, done=40, stop_reason="cancelled"
    )

    _, shown, _ = run_follow(iter([stopped]))

    assert "40/41" in shown
    assert "failed 0  reused 0  cancelled 1" in shown


def test_a_failed_operation_ends_the_watch_with_its_reason() -> None:
    final, _, _ = run_follow(
        iter([progress("failed", 0, 0, failure_reason="space 'space-x' is not registered")])
    )
    assert final.ended
    assert ending(final) == "space 'space-x' is not registered"


def test_an_operation_the_projector_never_sees_ends_the_watch_with_one_sentence() -> None:
    never = iter(lambda: None, object())
    with pytest.raises(CliError, match="has not seen the operation after 60s"):
        run_follow(never)


def test_an_operation_not_seen_within_a_shorter_grace_ends_the_watch_naming_it() -> None:
    never = iter(lambda: None, object())
    out = io.StringIO()
    sleeps: list[float] = []
    with pytest.raises(CliError, match="has not seen the operation after 5s: is the id right"):
        follow(lambda: next(never), 0.5, Console(file=out), sleeps.append, unseen_grace_s=5)
    assert len(sleeps) == 10


def test_an_operation_seen_within_the_grace_is_followed_to_its_end() -> None:
    polls = int(UNSEEN_GRACE_S / 0.5)
    final, _, sleeps = run_follow(iter([*([None] * polls), progress("completed", 1, 1)]))
    assert final.status == "completed"
    assert len(sleeps) == polls


def test_the_best_so_far_reads_property_equals_value() -> None:
    assert best_text(progress("running", 1, 1, best=BEST)) == "train_tokens_per_second=4210.5"
    assert best_text(progress("running", 1, 0)) == "-"


def test_show_lists_every_fact_every_count_and_the_best() -> None:
    rows = progress_rows(progress("running", 4, 1, best=BEST))
    values = {row["field"]: row["value"] for row in rows}
    assert values["status"] == "running"
    assert values["counts.requested"] == 4
    assert values["counts.in_flight"] == 3
    assert values["best.value"] == 4210.5
    assert values["best.entity_id"] == "e1"


ZEUS_CHOICE = OperatorChoice(
    values={"batch_size": 128, "power_limit": 175},
    expected_cost=41234.5,
    cost_so_far=123456.0,
    recurrence_costs=(50000.0, 41000.0, 32456.0),
    recurrence_phases=("pruning", "pruning", "bandit"),
)


def test_show_lists_what_the_operator_chose_its_expected_cost_and_the_cost_so_far() -> None:
    rows = progress_rows(progress("completed", 3, 3, choice=ZEUS_CHOICE))
    values = {row["field"]: row["value"] for row in rows}

    assert values["choice.batch_size"] == 128
    assert values["choice.power_limit"] == 175
    assert values["choice.expected_cost"] == 41234.5
    assert values["choice.cost_so_far"] == 123456.0
    assert values["choice.recurrences"] == "3 (2 pruning, 1 bandit)"
    assert not any(field.startswith("choice.recurrence_") for field in values)


def test_without_a_best_the_choice_is_what_the_operator_found() -> None:
    assert best_text(progress("completed", 3, 3, choice=ZEUS_CHOICE)) == (
        "batch_size=128, power_limit=175"
    )


class _AwayError(Exception):
    """Stands for the projector answering 503, or not at all, for now."""


def _answering(answers: list[OperationProgress | Exception]) -> Callable[[], OperationProgress]:
    """A fetch giving `answers` in turn, raising those that are errors."""
    given = iter(answers)

    def fetch() -> OperationProgress:
        answer = next(given)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return fetch


def test_a_projector_away_for_a_while_is_polled_through_and_the_watch_goes_on() -> None:
    """Once, a 503 (its store briefly unreadable) ended the watch, with the exit code of a
    failed operation, while the operation ran on."""
    running, completed = progress("running", 4, 1), progress("completed", 4, 4)
    fetch = _answering([running, _AwayError(), _AwayError(), progress("running", 4, 2), completed])

    sleeps: list[float] = []
    out = io.StringIO()
    final = follow(fetch, 0.5, Console(file=out), sleeps.append, away=(_AwayError,))

    assert final.status == "completed"
    assert len(sleeps) == 4


def test_a_projector_away_for_longer_than_the_grace_ends_the_watch_with_its_error() -> None:
    def fetch() -> OperationProgress:
        raise _AwayError("the projector at http://p is not answering")

    sleeps: list[float] = []
    with pytest.raises(_AwayError, match="not answering"):
        follow(
            fetch,
            0.5,
            Console(file=io.StringIO()),
            sleeps.append,
            away=(_AwayError,),
            away_grace_s=5,
        )
    assert len(sleeps) == 10


@pytest.mark.parametrize("seen", [True, False])
def test_an_interval_longer_than_a_grace_waits_the_grace_and_polls_once_more(seen: bool) -> None:
    """Each miss counted a whole interval before sleeping: with --interval 61 the watch gave up
    at the first miss, 0.2 s after it began, saying it had waited 60 s."""
    answers = iter([None, progress("completed", 1, 1) if seen else None])
    sleeps: list[float] = []
    out = io.StringIO()
    if seen:
        final = follow(
            lambda: next(answers), 61, Console(file=out), sleeps.append, clock=_slept(sleeps)
        )
        assert final.status == "completed"
    else:
        with pytest.raises(CliError, match="after 60s"):
            follow(
                lambda: next(answers), 61, Console(file=out), sleeps.append, clock=_slept(sleeps)
            )
    assert sleeps == [60.0]


def test_a_projector_away_with_an_interval_longer_than_its_grace_is_polled_once_more() -> None:
    fetch = _answering([_AwayError("503"), progress("completed", 1, 1)])

    sleeps: list[float] = []
    final = follow(
        fetch,
        61,
        Console(file=io.StringIO()),
        sleeps.append,
        away=(_AwayError,),
        clock=_slept(sleeps),
    )
    assert (final.status, sleeps) == ("completed", [60.0])


def _slept(sleeps: list[float], per_poll_s: float = 0.0) -> Callable[[], float]:
    """A clock that the fake sleeps move, and each reading of it `per_poll_s` more (a poll
    answered after that long): the polls take no time unless told."""
    polls = [0]

    def clock() -> float:
        polls[0] += 1
        return sum(sleeps) + per_poll_s * (polls[0] // 2)  # read twice per poll

    return clock


def test_a_projector_that_never_answers_ends_the_watch_after_the_grace_not_an_hour() -> None:
    """Each poll waited the client's 30 s timeout, and only the pauses counted: a 60 s grace
    lasted 121 polls, about an hour."""
    polls: list[int] = []

    def fetch() -> OperationProgress:
        polls.append(1)
        raise _AwayError("the projector at http://p did not answer within 30 s")

    sleeps: list[float] = []
    with pytest.raises(_AwayError, match="did not answer"):
        follow(
            fetch,
            0.5,
            Console(file=io.StringIO()),
            sleeps.append,
            away=(_AwayError,),
            clock=_slept(sleeps, per_poll_s=30.0),
        )
    assert len(polls) == 2  # 30 s, a pause, 30 s more: past the grace
