"""A trial's values put into its child pipeline's spec: `${trial.<property>}` replaced.

A trial's child pipeline is an ordinary pipeline (no `trials`): the parent writes the trial's
values where its spec reads them, and leaves every reference to a job as it is, for the child
to resolve. A string that is exactly one trial reference takes the value itself (a number
stays a number); one inside a longer string is formatted in, as `resolve` formats it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from discospace.core.pipelines import TRIAL, references, resolve, runs_own_trials
from discospace.core.spec import Scalar


def with_trial(value: JsonValue, trial: Mapping[str, Scalar]) -> JsonValue:
    """`value` with every `${trial.<property>}` replaced by the trial's value, but in the
    options of a nested pipeline that has trials of its own (its references are its trials')."""
    if isinstance(value, str):
        return _text(value, trial)
    if isinstance(value, Mapping):
        if runs_own_trials(value):  # its options as they are
            parameters = value["parameters"]
            assert isinstance(parameters, Mapping)
            return {
                **{k: with_trial(item, trial) for k, item in value.items() if k != "parameters"},
                "parameters": {
                    key: item if key == "options" else with_trial(item, trial)
                    for key, item in parameters.items()
                },
            }
        return {key: with_trial(item, trial) for key, item in value.items()}
    if isinstance(value, list):
        return [with_trial(item, trial) for item in value]
    return value


def _text(text: str, trial: Mapping[str, Scalar]) -> JsonValue:
    found = references(text)
    ours = [ref for ref in found if ref.job == TRIAL]
    if not ours:
        return text
    if len(found) == 1 and text == ours[0].text:
        return resolve(text, {}, trial)
    for ref in ours:
        formatted = resolve(f"[{ref.text}]", {}, trial)
        assert isinstance(formatted, str)
        text = text.replace(ref.text, formatted[1:-1])
    return text
