"""Choose the provider from settings: Gemini with a fallback when keyed, else rules."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date

from opentelemetry import trace

from services.common.llm._deterministic import DeterministicProvider, utc_today
from services.common.llm._fallback import FallbackProvider
from services.common.llm._gemini import GeminiProvider
from services.common.llm._interface import Embedder, LlmProvider
from services.common.llm._settings import LlmSettings

_log = logging.getLogger(__name__)


def create_provider(
    settings: LlmSettings,
    embedder: Embedder | None = None,
    *,
    tracer: trace.Tracer | None = None,
    today: Callable[[], date] = utc_today,
    logger: logging.Logger | None = None,
) -> LlmProvider:
    """Gemini wrapped in the deterministic fallback when a key is set, else deterministic."""
    deterministic = DeterministicProvider(embedder=embedder, today=today)
    if not settings.gemini_enabled:
        (logger or _log).info(
            "llm provider selected", extra={"fields": {"provider": deterministic.name}}
        )
        return deterministic
    gemini = GeminiProvider(settings, tracer=tracer)
    provider = FallbackProvider(gemini, deterministic, logger=logger)
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
    return provider
