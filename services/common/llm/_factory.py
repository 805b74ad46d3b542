"""Choose the provider from settings: Gemini with the caller's offline fallback when keyed,
else the offline provider alone."""

from __future__ import annotations

import logging

from opentelemetry import trace

from services.common._observability import Metrics
from services.common.llm._fallback import FallbackProvider
from services.common.llm._gemini import GeminiProvider
from services.common.llm._interface import LlmProvider
from services.common.llm._observed import ObservedProvider
from services.common.llm._settings import LlmSettings

_log = logging.getLogger(__name__)


def create_provider(
    settings: LlmSettings,
    *,
    offline: LlmProvider,
    tracer: trace.Tracer | None = None,
    metrics: Metrics | None = None,
    logger: logging.Logger | None = None,
) -> LlmProvider:
    """Gemini wrapped in ``offline`` as per-call fallback when a key is set, else ``offline``.

    The engine that calls supplies ``offline`` (the router's rules): what to do without a
    model is that engine's logic, not the LLM layer's.

    With a ``tracer`` every role call gets an ``llm.<role>`` span (and ``metrics`` its
    token and cost counts); Gemini's own per-request detail becomes an event on it.
    """
    if not settings.gemini_enabled:
        (logger or _log).info("llm provider selected", extra={"fields": {"provider": offline.name}})
        return _observed(offline, tracer, metrics)
    gemini = GeminiProvider(settings)
    provider = FallbackProvider(gemini, offline, logger=logger)
    (logger or _log).info(
        "llm provider selected",
        extra={
            "fields": {
                "provider": provider.name,
                "strong_model": settings.strong_model,
                "fast_model": settings.fast_model,
            }
        },
    )
    return _observed(provider, tracer, metrics)


def _observed(
    provider: LlmProvider, tracer: trace.Tracer | None, metrics: Metrics | None
) -> LlmProvider:
    if tracer is None:
        return provider
    return ObservedProvider(provider, tracer=tracer, metrics=metrics)
