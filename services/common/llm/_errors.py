"""Why a model call failed, in a form the fallback can report without leaking content."""

from __future__ import annotations

from services.common._errors import Unavailable
from services.common.llm._types import Usage


class LlmError(Unavailable):
    """A model call gave no usable answer; ``cause`` is a short, content-free label."""

    reason = "LLM_UNAVAILABLE"

    def __init__(self, message: str, *, cause: str, usage: Usage | None = None) -> None:
        super().__init__(message, retry_after_s=1.0)
        self.cause = cause
        self.usage = usage


class LlmUnavailable(LlmError):
    """The provider is down, throttling past our retries, or refused the request."""


class LlmTimeout(LlmError):
    """The call did not finish within the per-call timeout."""

    reason = "LLM_TIMEOUT"


class LlmOutputInvalid(LlmError):
    """The reply still broke its schema after the one re-ask."""

    reason = "LLM_OUTPUT_INVALID"
