"""discospace.events: the event contracts every service speaks.

Modules: `envelope` (the `Event` base, deterministic ids), `topics` (topic names and keys),
`spaces`, `actuators`, `operations`, `pipelines`, `parameters`, `measurements`, `dead_letter`
(the events), `event_types` (every type by name, JSON Schemas), `codec` (bytes <-> events,
upcasting on read), `upcasting` (the upcaster registry), `factory` (building new and caused
events).
`Objective` is the domain core's (`discospace.core.results`), re-exported here.
"""

from discospace.events.actuators import ActuatorRegistered
from discospace.events.codec import (
    MAX_MESSAGE_BYTES,
    EventDecodeError,
    EventTooLargeError,
    decode,
    decode_as,
    decode_verbatim,
    encode,
    encode_within,
    written_type,
)
from discospace.events.dead_letter import DeadLettered
from discospace.events.envelope import Event, caused_event_id, content_id
from discospace.events.event_types import all_event_types, event_type, json_schemas
from discospace.events.factory import caused_event, new_event, utc_now
from discospace.events.measurements import (
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    measurement_request_id,
)
from discospace.events.operations import (
    OperationCancelRequested,
    OperationCompleted,
    OperationCounts,
    OperationFailed,
    OperationRequested,
    OperationStarted,
    SamplesDrawn,
    SamplesRequested,
)
from discospace.events.parameters import Objective, OperationParameters, StoppingRules
from discospace.events.pipelines import (
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
)
from discospace.events.spaces import SpaceRegistered, SpaceRejected, SpaceSubmitted
from discospace.events.topics import Topic, TopicNames, measure_topic

__all__ = [
    "MAX_MESSAGE_BYTES",
    "ActuatorRegistered",
    "DeadLettered",
    "Event",
    "EventDecodeError",
    "EventTooLargeError",
    "MeasurementCompleted",
    "MeasurementFailed",
    "MeasurementRequested",
    "MeasurementReused",
    "MeasurementStarted",
    "Objective",
    "OperationCancelRequested",
    "OperationCompleted",
    "OperationCounts",
    "OperationFailed",
    "OperationParameters",
    "OperationRequested",
    "OperationStarted",
    "PipelineJobCompleted",
    "PipelineJobFailed",
    "PipelineJobStarted",
    "SamplesDrawn",
    "SamplesRequested",
    "SpaceRegistered",
    "SpaceRejected",
    "SpaceSubmitted",
    "StoppingRules",
    "Topic",
    "TopicNames",
    "all_event_types",
    "caused_event",
    "caused_event_id",
    "content_id",
    "decode",
    "decode_as",
    "decode_verbatim",
    "encode",
    "encode_within",
    "event_type",
    "json_schemas",
    "measure_topic",
    "measurement_request_id",
    "new_event",
    "utc_now",
    "written_type",
]
