"""An OpenAI-compatible chat-completions server (Ollama, vLLM, llama.cpp server, LM Studio)
as the wire under :class:`ModelProvider`.

``POST {OPENAI_BASE_URL}/chat/completions`` with the system prompt, the turns and
``temperature`` 0; the output type's JSON Schema goes in ``response_format`` where the
server enforces it (``OPENAI_STRUCTURED=json_schema``), else JSON mode or nothing, with the
schema written into the system prompt so the model still knows the shape. Whatever comes
back is repaired and validated by ``_base`` exactly as Gemini's reply is, so a server that
ignores ``response_format`` and wraps its JSON in prose or ``<think>`` still answers.

Retries cover 408/429/5xx and connection errors, with exponential backoff; a
``Retry-After`` is honoured when it fits in the backoff cap and the request's deadline,
and otherwise the call fails at once so the offline fallback answers without waiting. With
``OPENAI_STREAM=true`` the reply arrives as server-sent events and is assembled in order
(for servers or proxies that cut a long silent response); the router's answer deltas are
still emitted only after the output guard has checked the whole answer, as with Gemini.

One ``httpx.AsyncClient`` per provider, closed by :meth:`aclose`. The API key travels only
as ``Authorization: Bearer`` and only when set; no span, log or error carries it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from opentelemetry import trace

from services.common._deadline import effective_timeout, remaining
from services.common.llm._base import RETRYABLE_STATUS, ModelProvider, SleepFn, Tally, Turn
from services.common.llm._errors import LlmTimeout, LlmUnavailable
from services.common.llm._prices import DEFAULT_PRICES, ModelPrice
from services.common.llm._schema import standard_json_schema
from services.common.llm._settings import LlmSettings
from services.common.llm._types import Tier

_SPEAKERS = {"user": "user", "model": "assistant"}


class _HttpStatus(Exception):
    """The server answered with an error status (and perhaps a Retry-After)."""

    def __init__(self, status: int, retry_after_s: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after_s = retry_after_s


class _BrokenStream(Exception):
    """The event stream ended early or carried an error: worth another attempt."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class OpenAIProvider(ModelProvider):
    """Every role on an OpenAI-compatible server; ``tracer`` and ``sleep`` injectable."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        tracer: trace.Tracer | None = None,
        prices: Mapping[str, ModelPrice] = DEFAULT_PRICES,
        sleep: SleepFn = asyncio.sleep,
    ) -> None:
        if settings.openai_base_url is None:
            raise ValueError("OpenAIProvider needs OPENAI_BASE_URL")
        super().__init__(
            settings,
            models={Tier.STRONG: settings.strong_model, Tier.FAST: settings.fast_model},
            tracer=tracer,
            prices=prices,
        )
        headers = {"Accept": "application/json"}
        if settings.openai_api_key is not None:
            headers["Authorization"] = f"Bearer {settings.openai_api_key}"
        self._client = httpx.AsyncClient(
            base_url=settings.openai_base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(settings.timeout_s),
            follow_redirects=False,
        )
        self._sleep = sleep

    @property
    def name(self) -> str:
        return "openai"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _complete(
        self, system: str, turns: list[Turn], output_type: type[Any], tally: Tally
    ) -> str:
        return await self._send(self._body(system, turns, output_type, tally.model), tally)

    def _body(
        self, system: str, turns: list[Turn], output_type: type[Any], model: str
    ) -> dict[str, Any]:
        mode = self._settings.openai_structured
        schema = standard_json_schema(output_type)
        if mode != "json_schema":
            # Nothing on the wire tells the model the shape: the prompt has to.
            system += "\nThe JSON object must match this JSON Schema: " + json.dumps(
                schema, separators=(",", ":")
            )
        body: dict[str, Any] = {
            "model": model,
            "messages": [
                {"role": "system", "content": system},
                *({"role": _SPEAKERS[t.speaker], "content": t.text} for t in turns),
            ],
            "temperature": 0.0,
        }
        if mode == "json_schema":
            # strict stays false: local servers enforce the schema by grammar whatever the
            # flag, and OpenAI's strict mode would refuse the optional fields outright.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": output_type.__name__, "schema": schema, "strict": False},
            }
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        if self._settings.openai_stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def _send(self, body: dict[str, Any], tally: Tally) -> str:
        retries = self._settings.max_retries
        for attempt in range(retries + 1):
            tally.calls += 1
            timeout = effective_timeout(self._settings.timeout_s)
            retry_after: float | None = None
            cause: str
            try:
                async with asyncio.timeout(timeout):
                    if body.get("stream"):
                        text, tokens = await self._stream(body)
                    else:
                        text, tokens = await self._post(body, tally)
            except (TimeoutError, httpx.TimeoutException):
                raise LlmTimeout(
                    f"the OpenAI-compatible server did not answer within {timeout:.3g} s",
                    cause="timeout",
                    usage=tally.usage(self._prices),
                ) from None
            except _HttpStatus as exc:
                cause = f"http_{exc.status}"
                if exc.status not in RETRYABLE_STATUS:
                    raise LlmUnavailable(
                        f"the OpenAI-compatible server refused the call (HTTP {exc.status})",
                        cause=cause,
                        usage=tally.usage(self._prices),
                    ) from None
                retry_after = exc.retry_after_s
            except _BrokenStream as exc:
                cause = exc.cause
            except (httpx.TransportError, OSError) as exc:
                cause = f"transport_{type(exc).__name__}"
            else:
                tally.add(*tokens)
                return text
            if attempt == retries:
                raise LlmUnavailable(
                    f"the OpenAI-compatible server is unavailable after {attempt + 1} "
                    f"attempt(s) ({cause})",
                    cause=cause,
                    usage=tally.usage(self._prices),
                )
            delay = self._backoff(attempt)
            if retry_after is not None:
                left = remaining()
                if retry_after > self._settings.backoff_max_s or (
                    left is not None and retry_after >= left
                ):
                    # Waiting that long would outlast the request: the fallback answers now.
                    raise LlmUnavailable(
                        f"the OpenAI-compatible server asks to wait {retry_after:.3g} s",
                        cause=cause,
                        usage=tally.usage(self._prices),
                    )
                delay = max(delay, retry_after)
            tally.retries += 1
            await self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _post(self, body: dict[str, Any], tally: Tally) -> tuple[str, tuple[int, int]]:
        response = await self._client.post("chat/completions", json=body)
        if response.status_code >= 400:
            raise _HttpStatus(response.status_code, _retry_after(response.headers))
        try:
            data = response.json()
            message = data["choices"][0]["message"]
            text = message.get("content") or ""
            if not isinstance(text, str):
                raise TypeError("content is not text")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            # Not a chat-completions reply at all (a wrong base URL, a web UI): no retry.
            raise LlmUnavailable(
                "the OpenAI-compatible server's reply is not a chat completion",
                cause="bad_response",
                usage=tally.usage(self._prices),
            ) from None
        return text, _tokens(data.get("usage"))

    async def _stream(self, body: dict[str, Any]) -> tuple[str, tuple[int, int]]:
        parts: list[str] = []
        tokens = (0, 0)
        async with self._client.stream("POST", "chat/completions", json=body) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _HttpStatus(response.status_code, _retry_after(response.headers))
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue  # blank separators, comments, event names
                payload = line[5:].strip()
                if payload == "[DONE]":
                    return "".join(parts), tokens
                try:
                    chunk = json.loads(payload)
                except ValueError:
                    raise _BrokenStream("bad_stream") from None
                if not isinstance(chunk, dict) or "error" in chunk:
                    raise _BrokenStream("stream_error")
                for choice in chunk.get("choices") or ():
                    if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                        continue
                    delta = choice.get("delta")
                    content = delta.get("content") if isinstance(delta, dict) else None
                    if isinstance(content, str):
                        parts.append(content)
                if chunk.get("usage"):
                    tokens = _tokens(chunk["usage"])
        raise _BrokenStream("stream_cut")


def _tokens(usage: object) -> tuple[int, int]:
    """(prompt, completion) tokens from a ``usage`` object; servers that omit it count 0."""
    if not isinstance(usage, dict):
        return 0, 0
    prompt = usage.get("prompt_tokens")
    completion = usage.get("completion_tokens")
    return (
        prompt if isinstance(prompt, int) else 0,
        completion if isinstance(completion, int) else 0,
    )


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date)."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
