"""The registry's domain metrics, on the service's Prometheus registry (no per-space labels)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from discospace.events import SpaceRegistered, SpaceRejected, SpaceSubmitted
from discospace.registry.domain import RegistryState


@dataclass(frozen=True)
class RegistryMetrics:
    """Answers by outcome; catalog and registration counts."""

    answers: Counter
    catalog_experiments: Gauge
    registered_spaces: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry) -> RegistryMetrics:
        answers = Counter(
            "discospace_space_submissions",
            "Submitted spaces answered, by outcome: registered, already_registered, rejected.",
            ["outcome"],
            registry=registry,
        )
        for outcome in ("registered", "already_registered", "rejected"):
            answers.labels(outcome=outcome)
        return cls(
            answers=answers,
            catalog_experiments=Gauge(
                "discospace_catalog_experiments",
                "Experiments in the catalog folded from actuator announcements.",
                registry=registry,
            ),
            registered_spaces=Gauge(
                "discospace_registered_spaces",
                "Spaces the registry knows as registered.",
                registry=registry,
            ),
        )

    def observe(self, state: RegistryState) -> None:
        self.catalog_experiments.set(len(state.catalog))
        self.registered_spaces.set(len(state.registrations))

    def answered(self, answer: SpaceRegistered | SpaceRejected, cause: SpaceSubmitted) -> None:
        """Count an answer; a registration another submission caused was already there."""
        if isinstance(answer, SpaceRejected):
            outcome = "rejected"
        elif answer.causation_id == cause.event_id:
            outcome = "registered"
        else:
            outcome = "already_registered"
        self.answers.labels(outcome=outcome).inc()
