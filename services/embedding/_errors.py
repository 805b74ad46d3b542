"""Embedding domain errors; the servicer maps them onto gRPC status codes later.

Reasons are the ``tandem.v1.ErrorReason`` names without their ``ERROR_REASON_`` prefix.
"""

from __future__ import annotations

from collections.abc import Mapping

REASON_INVALID_ARGUMENT = "INVALID_ARGUMENT"
REASON_BATCH_TOO_LARGE = "BATCH_TOO_LARGE"
REASON_TEXT_TOO_LONG = "TEXT_TOO_LONG"
REASON_EMPTY_TEXT = "EMPTY_TEXT"
REASON_MODEL_MISMATCH = "MODEL_MISMATCH"


class EmbeddingInputError(ValueError):
    """A request breaks a documented limit; becomes INVALID_ARGUMENT with a BadRequest."""

    def __init__(
        self,
        field: str,
        description: str,
        *,
        reason: str = REASON_INVALID_ARGUMENT,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{field}: {description}")
        self.field = field
        self.description = description
        self.reason = reason
        self.metadata = dict(metadata or {})


class EmbeddingModelMismatchError(RuntimeError):
    """The caller expects vectors from another model; becomes FAILED_PRECONDITION."""

    reason = REASON_MODEL_MISMATCH

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"expected model {expected!r}, but this service runs {actual!r}")
        self.expected = expected
        self.actual = actual


class EmbeddingModelError(RuntimeError):
    """The model is missing, misconfigured or produced unusable output."""


class EmbeddingUnavailableError(RuntimeError):
    """The engine is shutting down and takes no new work; callers may retry elsewhere."""
