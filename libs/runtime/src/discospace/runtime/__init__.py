"""discospace.runtime: what every service shell is made of.

`settings` (ServiceSettings, env prefix per service), `service` (create_service: broker,
/metrics, /health, AsyncAPI), `consuming` (typed handlers, manual commit, duplicate dropping),
`folding` (fold topics up to their end at start, then go live from exactly there: `follow`),
`deadletter` (bad messages to the dead-letter topic), `failures` (a transient failure is
retried without bound, any other a bounded number of times, then dead-lettered: raise
`TransientError` for a dependency that is down), `publishing` (`to_<topic>` publishers),
`runner` (uvicorn, graceful SIGTERM), `logs` (JSON lines), `metrics`, `provisioning` (topics),
`idempotence` (seen event ids), `contracts` (`python -m discospace.runtime.contracts proto`).
"""

from discospace.runtime.consuming import Consumer, WiringError, bind, hold_commit
from discospace.runtime.failures import RetryPolicy, TransientError, is_transient
from discospace.runtime.idempotence import SeenEventIds
from discospace.runtime.metrics import RuntimeMetrics
from discospace.runtime.publishing import EventPublisher
from discospace.runtime.runner import run, serve
from discospace.runtime.service import Service, create_service
from discospace.runtime.settings import ServiceSettings

__all__ = [
    "Consumer",
    "EventPublisher",
    "RetryPolicy",
    "RuntimeMetrics",
    "SeenEventIds",
    "Service",
    "ServiceSettings",
    "TransientError",
    "WiringError",
    "bind",
    "create_service",
    "hold_commit",
    "is_transient",
    "run",
    "serve",
]
