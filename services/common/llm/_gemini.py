"""Gemini through google-genai: the wire under :class:`ModelProvider`.

The role logic (prompts, schema-bound JSON, repair, the one re-ask, spans) is
``_base``'s; here is how a conversation reaches Gemini: the output type's schema as
``response_schema``, and 429/5xx and transport errors retried with exponential backoff
inside a per-attempt timeout. Token usage and a cost estimate come back with every result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from opentelemetry import trace

from services.common._deadline import effective_timeout
from services.common.llm._base import RETRYABLE_STATUS, ModelProvider, SleepFn, Tally, Turn
from services.common.llm._errors import LlmTimeout, LlmUnavailable
from services.common.llm._prices import DEFAULT_PRICES, ModelPrice
from services.common.llm._schema import json_schema
from services.common.llm._settings import LlmSettings
from services.common.llm._types import Tier

# google-genai 3.x sends through httpx2 (a fork under its own namespace, whose errors are
# not httpx's); 1.x and 2.x through httpx. A refused connection or a read timeout must be
# recognised from either, or a dead endpoint escapes the fallback as an unexpected error.
try:
    import httpx2
except ImportError:  # pragma: no cover - google-genai before 3.0
    _TIMEOUTS: tuple[type[BaseException], ...] = (TimeoutError, httpx.TimeoutException)
    _TRANSPORT: tuple[type[BaseException], ...] = (httpx.TransportError, OSError)
else:
    _TIMEOUTS = (TimeoutError, httpx.TimeoutException, httpx2.TimeoutException)
    _TRANSPORT = (httpx.TransportError, httpx2.TransportError, OSError)


class GeminiProvider(ModelProvider):
    """Every role on Gemini; ``client`` and ``tracer`` are injectable for tests."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        client: genai.Client | None = None,
        tracer: trace.Tracer | None = None,
        prices: Mapping[str, ModelPrice] = DEFAULT_PRICES,
        sleep: SleepFn = asyncio.sleep,
    ) -> None:
        if client is None:
            if settings.api_key is None:
                raise ValueError("GeminiProvider needs GEMINI_API_KEY or a client")
            client = genai.Client(
                api_key=settings.api_key,
                http_options=genai_types.HttpOptions(
                    base_url=settings.base_url, timeout=int(settings.timeout_s * 1000)
                ),
            )
        super().__init__(
            settings,
            models={Tier.STRONG: settings.strong_model, Tier.FAST: settings.fast_model},
            tracer=tracer,
            prices=prices,
        )
        self._client = client
        self._sleep = sleep

    @property
    def name(self) -> str:
        return "gemini"

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        self._client.close()

    async def _complete(
        self, system: str, turns: list[Turn], output_type: type[Any], tally: Tally
    ) -> str:
        config = genai_types.GenerateContentConfig(
            system_instruction=system,
            response_mime_type="application/json",
            response_schema=json_schema(output_type),
            temperature=0.0,
            candidate_count=1,
        )
        contents = [
            genai_types.Content(role=turn.speaker, parts=[genai_types.Part(text=turn.text)])
            for turn in turns
        ]
        response = await self._generate(tally, contents, config)
        return response.text or ""

    async def _generate(
        self,
        tally: Tally,
        contents: list[genai_types.Content],
        config: genai_types.GenerateContentConfig,
    ) -> genai_types.GenerateContentResponse:
        retries = self._settings.max_retries
        for attempt in range(retries + 1):
            tally.calls += 1
            timeout = effective_timeout(self._settings.timeout_s)
            cause: str
            try:
                async with asyncio.timeout(timeout):
                    response = await self._client.aio.models.generate_content(
                        model=tally.model, contents=contents, config=config
                    )
            except _TIMEOUTS:
                raise LlmTimeout(
                    f"Gemini did not answer within {timeout:.3g} s",
                    cause="timeout",
                    usage=tally.usage(self._prices),
                ) from None
            except genai_errors.APIError as exc:
                cause = f"http_{exc.code}"
                if exc.code not in RETRYABLE_STATUS:
                    raise LlmUnavailable(
                        f"Gemini refused the call (HTTP {exc.code})",
                        cause=cause,
                        usage=tally.usage(self._prices),
                    ) from None
            except _TRANSPORT as exc:
                cause = f"transport_{type(exc).__name__}"
            else:
                _add_usage(tally, response.usage_metadata)
                return response
            if attempt == retries:
                raise LlmUnavailable(
                    f"Gemini unavailable after {attempt + 1} attempt(s) ({cause})",
                    cause=cause,
                    usage=tally.usage(self._prices),
                )
            tally.retries += 1
            await self._sleep(self._backoff(attempt))
        raise AssertionError("unreachable")  # pragma: no cover


def _add_usage(
    tally: Tally, metadata: genai_types.GenerateContentResponseUsageMetadata | None
) -> None:
    if metadata is None:
        return
    # Thinking tokens are billed as output.
    tally.add(
        metadata.prompt_token_count or 0,
        (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0),
    )
