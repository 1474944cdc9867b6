"""`Client`: the projector's views over HTTP, as pandas DataFrames and typed models.

    from discospace.client import Client

    with Client("http://127.0.0.1:8105") as projector:
        table = projector.entities("space-5e1d0c9b7a24", include="measured")
        progress = projector.operation("op-3f2a9c1d")
        comparison = projector.pipeline_comparison("op-3f2a9c1d")   # a pipeline's before/after

Every failure a user can meet is a `ClientError` whose message is one sentence: the projector
not answering, an unknown space or operation, a bad parameter, a missing or wrong API token.

A projector that asks for a token (`DISCOSPACE_PROJECTOR_API_TOKEN`) is read with
`Client(url, token=...)`, or with the token in `DISCOSPACE_API_TOKEN`: it is sent as
`Authorization: Bearer <token>` with every request.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import TypeAdapter, ValidationError

from discospace.client.models import (
    OPERATION_STATUSES,
    ActuatorPool,
    OperationProgress,
    OperationResult,
    SpaceDetail,
    SpaceSummary,
)
from discospace.client.pipelines import (
    DEFAULT_PAIRS,
    TRIALS_STAGE,
    PipelineComparison,
    Run,
    TrialPoint,
    compare_pipeline,
    pipeline_objective,
    trial_points,
)
from discospace.core import Objective, target_of
from discospace.core.urls import redacted_url

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_URL = "http://127.0.0.1:8105"
URL_ENV = "DISCOSPACE_PROJECTOR_URL"
TOKEN_ENV = "DISCOSPACE_API_TOKEN"
Include = Literal["measured", "elsewhere", "unmeasured", "unsampled", "all"]
ExportFormat = Literal["csv", "json", "parquet"]
_MEDIA_TYPES: dict[str, str] = {
    "csv": "text/csv",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}
"""The media type the projector gives each export (its `exports.MEDIA_TYPES`, parameters
aside): an answer of another type is not the file asked for (another server at the URL), and
is not written where the user asked for the file."""
M = TypeVar("M")


class ClientError(Exception):
    """The projector could not answer what was asked; `str(error)` is one sentence."""


class ProjectorUnavailableError(ClientError):
    """Nothing answered at the projector's URL, or it answered too late."""


class UnauthorizedError(ClientError):
    """The projector asks for an API token, and none or another one was sent."""


class NotKnownError(ClientError):
    """The space or operation asked for is not known to the projector."""


class NotAPipelineError(ClientError):
    """A pipeline's view was asked of an operation that is not a pipeline."""


class Client:
    """A client of the projector's HTTP API.

    `base_url` defaults to `DISCOSPACE_PROJECTOR_URL`, else http://127.0.0.1:8105; `token`
    (the projector's API token) to `DISCOSPACE_API_TOKEN`, else none is sent.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token: str | None = None,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = base_url or os.environ.get(URL_ENV) or DEFAULT_URL
        problem = _url_problem(url)
        if problem is not None:
            raise ClientError(f"the projector URL {redacted_url(url)!r} is not valid: {problem}.")
        self.base_url = url.rstrip("/")
        self.shown_url = redacted_url(self.base_url)
        """`base_url` as messages show it: without its password, if it holds one."""
        self.timeout_s = timeout_s
        given = token if token is not None else os.environ.get(TOKEN_ENV)
        if given is not None and not given.isascii():
            raise ClientError("the API token holds characters other than ASCII; check it.")
        if given is not None and not given.strip().isprintable():
            # an HTTP header cannot carry a line break or another control character: httpx
            # would fail each request, which read as "the projector is not answering"
            raise ClientError("the API token holds a line break or a control character; check it.")
        try:
            self._http = httpx.Client(
                base_url=self.base_url,
                timeout=timeout_s,
                transport=transport,
                headers=_authorization(given),
            )
        except httpx.InvalidURL as error:
            raise _invalid_url(self.shown_url, error) from None

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def spaces(self) -> list[SpaceSummary]:
        """Every space the projector knows: id, sample store, size, status, reason."""
        return self._json("/spaces", {}, TypeAdapter(list[SpaceSummary]))

    def space(self, space_id: str) -> SpaceDetail:
        """One space: its spec, resolved experiments and view columns."""
        return self._json("/space", {"id": space_id}, TypeAdapter(SpaceDetail))

    def entities(
        self,
        space_id: str,
        include: Include | Sequence[Include] | str = "all",
        limit: int | None = None,
    ) -> pd.DataFrame:
        """The entities of a space: one column per constitutive and observed property.

        `include`: measured (through this space), elsewhere (through other spaces of its sample
        store), unmeasured (sampled, no valid result; see `reason`), unsampled, or all.
        """
        import pandas as pd  # here, not at the top: the other views start without pandas

        data = self.export(space_id, include, "parquet", limit)
        try:
            return pd.read_parquet(io.BytesIO(data))
        except Exception:  # pyarrow's errors (ArrowInvalid, ...) for a body that is no Parquet
            raise self._unreadable("/space/entities") from None

    def export(
        self,
        space_id: str,
        include: Include | Sequence[Include] | str = "all",
        format: ExportFormat | str = "csv",
        limit: int | None = None,
    ) -> bytes:
        """A space's entities as a CSV, JSON or Parquet file's bytes."""
        parameters = {"id": space_id, "include": _include(include), "format": format}
        if limit is not None:
            parameters["limit"] = str(limit)
        answer = self._get("/space/entities", parameters)
        media_type = answer.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != _MEDIA_TYPES.get(format, media_type):
            raise self._unreadable("/space/entities")
        return answer.content

    def operations(
        self,
        space_id: str | None = None,
        status: str | Sequence[str] | None = None,
        *,
        parent: str | None = None,
        top_level: bool = False,
    ) -> list[OperationProgress]:
        """Every operation, oldest first, with its status, counts, best so far and stop reason
        (a pipeline with its jobs).

        `space_id` keeps the operations on that space; `status` (one, or a list) those with
        that status (`OPERATION_STATUSES`); `parent` those that pipeline asked for (its jobs'
        and trials' child operations); `top_level` those no pipeline asked for.
        """
        wanted = _statuses(status)
        query = {"parent": parent} if parent is not None else {}
        listed = self._json("/operations", query, TypeAdapter(list[OperationProgress]))
        return [
            operation
            for operation in listed
            if (space_id is None or operation.space_id == space_id)
            and (not wanted or operation.status in wanted)
            and (parent is None or operation.parent_operation_id == parent)
            and not (top_level and operation.parent_operation_id is not None)
        ]

    def operation(self, operation_id: str) -> OperationProgress:
        """One operation's progress."""
        return self._json("/operation", {"id": operation_id}, TypeAdapter(OperationProgress))

    def operation_results(self, operation_id: str) -> list[OperationResult]:
        """The results an operation received (measured or reused), oldest first."""
        adapter = TypeAdapter(list[OperationResult])
        return self._json("/operation/results", {"id": operation_id}, adapter)

    def children(self, operation_id: str) -> list[OperationProgress]:
        """The operations a pipeline asked for (its jobs' and trials' children), oldest first;
        `NotKnownError` for an operation the projector does not know."""
        self.operation(operation_id)
        return self.operations(parent=operation_id)

    def pipeline(self, operation_id: str) -> OperationProgress:
        """A pipeline's progress with its jobs; `NotAPipelineError` for another operation."""
        progress = self.operation(operation_id)
        if not progress.is_pipeline:
            raise NotAPipelineError(
                f"operation {operation_id} is not a pipeline (its operator is "
                f"{progress.operator or 'not known yet'})."
            )
        return progress

    def pipeline_trials(self, operation_id: str) -> list[TrialPoint]:
        """A pipeline's trials in trial order: recipe values, objective value, status."""
        return trial_points(self.pipeline(operation_id))

    def pipeline_comparison(
        self,
        operation_id: str,
        *,
        baseline: Sequence[str] = (),
        objective: Objective | str | None = None,
        direction: Literal["min", "max"] | None = None,
        pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
    ) -> PipelineComparison:
        """A pipeline's probe-versus-evaluate comparison (`discospace.client.pipelines`): the
        statistics of each target before and after, and the objective of the unrefined
        baseline (the probe stage's jobs, or the `baseline` jobs) against the best after
        refinement. `objective` defaults to its trials' (else the pipeline's); a property
        name is minimised unless `direction` (or the pipeline's objective on the same
        property) says otherwise. `pairs`: (before-prefix, after-prefix) of targets that name
        one statistic before and after processing (`raw_x` and `kept_x` by default)."""
        progress = self.pipeline(operation_id)
        runs = self._runs(progress)
        _check_jobs(operation_id, baseline, runs)
        wanted = _objective(objective, direction, pipeline_objective(progress))
        children = [job.child_operation_id for _, jobs in runs for job in jobs]
        results = {child: self._results_of(child) for child in children if child}
        return compare_pipeline(progress, runs, results, wanted, baseline, pairs)

    def _runs(self, progress: OperationProgress) -> list[Run]:
        """The pipeline's runs of its stages: itself, or each trial's child pipeline."""
        trials = [job for job in progress.jobs if job.stage == TRIALS_STAGE]
        if not trials:
            return [(None, progress.jobs)]
        runs: list[Run] = []
        for job in trials:
            if job.child_operation_id is None:
                continue
            try:
                runs.append((job.trial, self.operation(job.child_operation_id).jobs))
            except NotKnownError:  # requested, not projected yet
                continue
        return runs

    def _results_of(self, operation_id: str) -> list[OperationResult]:
        """An operation's results; none while the projector has not seen it yet."""
        try:
            return self.operation_results(operation_id)
        except NotKnownError:
            return []

    def actuators(self) -> list[ActuatorPool]:
        """Every actuator on every pool, with its catalog and workers."""
        return self._json("/actuators", {}, TypeAdapter(list[ActuatorPool]))

    def _json(self, path: str, parameters: dict[str, str], adapter: TypeAdapter[M]) -> M:
        answer = self._get(path, parameters)
        try:
            return adapter.validate_json(answer.content)
        except ValidationError:
            raise self._unreadable(path) from None

    def _unreadable(self, path: str) -> ClientError:
        """What to say of an answer this client cannot read (another server at the URL, or
        another version of the projector)."""
        return ClientError(
            f"the projector at {self.shown_url} answered {path} with a document this client "
            "cannot read; are the client and the projector the same version?"
        )

    def _get(self, path: str, parameters: dict[str, str]) -> httpx.Response:
        try:
            request = self._http.build_request("GET", path, params=parameters)
        except httpx.InvalidURL as error:  # the URL was checked when the client was made
            raise ClientError(_too_long(parameters, error)) from None
        try:
            answer = self._http.send(request)
        except httpx.TimeoutException:
            raise ProjectorUnavailableError(
                f"the projector at {self.shown_url} did not answer within {self.timeout_s:g} s."
            ) from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as error:
            raise _invalid_url(self.shown_url, error) from None
        except httpx.TransportError:
            raise ProjectorUnavailableError(
                f"the projector at {self.shown_url} is not answering: start it with `make up`."
            ) from None
        except httpx.RequestError as error:  # a body it cannot decompress, a redirect loop
            raise ClientError(
                f"the projector at {self.shown_url} answered {path} with something this client "
                f"cannot read ({type(error).__name__}: {error}); is another server at that URL?"
            ) from None
        if answer.status_code == 401:
            raise _unauthorized(self.shown_url, sent="authorization" in self._http.headers)
        if answer.status_code >= 400:
            raise _error_of(answer, self.shown_url)
        return answer


def _too_long(parameters: dict[str, str], error: httpx.InvalidURL) -> str:
    """A request whose values cannot be sent in a URL: the longest one named."""
    name, value = max(parameters.items(), key=lambda item: len(item[1]), default=("", ""))
    if not name:
        return f"the request cannot be sent ({error})."
    return (
        f"the {name} given is too long to send ({len(value):,} characters); no {name} is that "
        "long: check what was given."
    )


def _check_jobs(operation_id: str, names: Sequence[str], runs: Sequence[Run]) -> None:
    """A `ClientError` naming the first of `names` that is no job of the pipeline's runs."""
    known = list(dict.fromkeys(job.job for _, jobs in runs for job in jobs))
    for name in names:
        if name not in known:
            raise ClientError(
                f"pipeline {operation_id} has no job '{name}'; its jobs are: "
                f"{', '.join(known) or 'none yet'}."
            )


def _objective(
    objective: Objective | str | None,
    direction: Literal["min", "max"] | None,
    own: Objective | None,
) -> Objective | None:
    """The objective to compare (see `Client.pipeline_comparison`)."""
    if isinstance(objective, Objective):
        return objective
    if objective is None:
        if own is None or direction is None:
            return own
        return Objective(property=own.property, direction=direction)
    same = own is not None and target_of(own.property) == target_of(objective)
    chosen = direction or (own.direction if own is not None and same else "min")
    return Objective(property=objective, direction=chosen)


def _statuses(status: str | Sequence[str] | None) -> frozenset[str]:
    """The statuses asked for (empty: any); a status no operation can have is a `ClientError`."""
    wanted = frozenset([status] if isinstance(status, str) else status or ())
    unknown = sorted(wanted - set(OPERATION_STATUSES))
    if unknown:
        known = ", ".join(OPERATION_STATUSES)
        raise ClientError(f"status '{unknown[0]}' is not one of {known}.")
    return wanted


def _authorization(token: str | None) -> dict[str, str]:
    """The header that carries the API token; none for no token (or a blank one)."""
    token = (token or "").strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


def _include(include: Include | Sequence[Include] | str) -> str:
    return include if isinstance(include, str) else ",".join(include)


def _url_problem(url: str) -> str | None:
    """What makes `url` no projector address (no http(s) scheme, no host, a port out of range),
    which httpx would only report as a projector "not answering"; None when it looks right."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:  # "Port out of range 0-65535", "Invalid IPv6 URL"
        if "port" in str(error).lower():
            return "its port is not a number from 1 to 65535"
        return None  # httpx names what it cannot parse (`_invalid_url`)
    if parts.scheme.lower() not in ("http", "https"):
        return "it must start with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "its port is not a number from 1 to 65535"
    return None


def _invalid_url(url: str, error: Exception) -> ClientError:
    """The sentence for a projector URL httpx cannot use (malformed, or another scheme)."""
    return ClientError(f"the projector URL {url!r} is not valid ({str(error).rstrip('.')}).")


def _unauthorized(base_url: str, *, sent: bool) -> UnauthorizedError:
    """The projector asks for its API token: none, or another one, was sent."""
    what = "refused the API token sent" if sent else "asks for an API token"
    return UnauthorizedError(f"the projector at {base_url} {what}: set {TOKEN_ENV} to its token.")


def _error_of(answer: httpx.Response, base_url: str) -> ClientError:
    sentence = _error_sentence(answer) or (
        f"the projector at {base_url} answered HTTP {answer.status_code}."
    )
    if answer.status_code == 404:
        return NotKnownError(sentence)
    if answer.status_code in (502, 503, 504):
        return ProjectorUnavailableError(sentence)
    return ClientError(sentence)


def _error_sentence(answer: httpx.Response) -> str | None:
    try:
        body: Any = answer.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) and error else None
