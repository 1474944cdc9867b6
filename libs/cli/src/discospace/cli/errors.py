"""Turning the errors a user can meet into one line."""

from pydantic import ValidationError

from discospace.core.loading import describe_validation_error


def user_error_line(error: Exception) -> str:
    """``error: <one sentence>``; a validation error shows its first problem."""
    if isinstance(error, ValidationError):
        text = describe_validation_error(error, None, error.title)
    else:
        text = str(error)
    return "error: " + " ".join(text.split())
