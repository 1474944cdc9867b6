"""Typed errors a user can meet: each carries one sentence that names what is wrong.

Every error subclasses :class:`DiscospaceError` (itself a ``ValueError``), so a caller can catch
the whole family at a boundary (the CLI, a service handler) and show ``str(error)`` as is.
"""


class DiscospaceError(ValueError):
    """Base of every error a user can meet; ``str(error)`` is one readable sentence."""


class SpecError(DiscospaceError):
    """A space or experiment file is unreadable or does not match the file models."""


class DomainError(DiscospaceError):
    """A property domain is ill-formed (no values, low >= high, interval <= 0, mixed types...)."""


class EntitySpaceError(DiscospaceError):
    """An entity space is ill-formed, or an operation on it cannot be done (e.g. sampling)."""


class EntityError(DiscospaceError):
    """A point does not belong to an entity space; the message gives the reason."""


class ExperimentError(DiscospaceError):
    """An experiment or its parameterization is ill-formed."""


class MeasurementSpaceError(DiscospaceError):
    """A measurement space does not fit an entity space; the message lists what is missing."""


class MeasurementError(DiscospaceError):
    """A measurement result is ill-formed."""


class TimeError(DiscospaceError):
    """A time value cannot be parsed, combined or compared."""


class TimeConversionError(TimeError):
    """A time value cannot be converted: the message names the missing fact."""


class PipelineError(DiscospaceError):
    """A pipeline is ill-formed, or one of its jobs cannot go on (a reference to a result that
    is missing, a hook that cannot work on what it was given)."""
