"""Choose the provider from settings: Gemini or an OpenAI-compatible server, with the
caller's offline fallback, or the offline provider alone."""

from __future__ import annotations

import logging

from opentelemetry import trace

from services.common._observability import Metrics
from services.common.llm._base import ModelProvider
from services.common.llm._fallback import FallbackProvider
from services.common.llm._gemini import GeminiProvider
from services.common.llm._interface import LlmProvider
from services.common.llm._observed import ObservedProvider
from services.common.llm._openai import OpenAIProvider
from services.common.llm._settings import LlmSettings

_log = logging.getLogger(__name__)


def create_model_provider(
    settings: LlmSettings, *, tracer: trace.Tracer | None = None
) -> ModelProvider | None:
    """The model ``LLM_PROVIDER`` selects (Gemini, or an OpenAI-compatible server) with
    no fallback of its own, or ``None`` offline: for an engine whose own rules take over
    when the model fails (the SQL service's generator)."""
    if settings.gemini_enabled:
        return GeminiProvider(settings, tracer=tracer)
    if settings.openai_enabled:
        return OpenAIProvider(settings, tracer=tracer)
    return None


def create_provider(
    settings: LlmSettings,
    *,
    offline: LlmProvider,
    tracer: trace.Tracer | None = None,
    metrics: Metrics | None = None,
    logger: logging.Logger | None = None,
) -> LlmProvider:
    """The selected model wrapped in ``offline`` as per-call fallback, else ``offline``.

    The engine that calls supplies ``offline`` (the router's rules): what to do without a
    model is that engine's logic, not the LLM layer's.

    With a ``tracer`` every role call gets an ``llm.<role>`` span (and ``metrics`` its
    token and cost counts); the provider's own per-request detail becomes an event on it.
    """
    model = create_model_provider(settings)
    if model is None:
        (logger or _log).info("llm provider selected", extra={"fields": {"provider": offline.name}})
        return _observed(offline, tracer, metrics)
    provider = FallbackProvider(model, offline, logger=logger)
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
