"""Fixtures for the LLM layer: the fake Gemini and OpenAI-compatible endpoints and providers
wired to them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.common.llm import GeminiProvider, LlmSettings, OpenAIProvider
from tests.fakes.gemini import FakeGemini
from tests.fakes.openai import FakeOpenAI


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def gemini_settings(base_url: str, **overrides: object) -> LlmSettings:
    """Fast timeouts and tiny backoff so retry tests take milliseconds."""
    values: dict[str, object] = {
        "api_key": "test-key",
        "base_url": base_url,
        "strong_model": "gemini-2.5-pro",
        "fast_model": "gemini-2.5-flash",
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_initial_s": 0.01,
    }
    values.update(overrides)
    return LlmSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def gemini(
    fake_gemini: FakeGemini, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> AsyncIterator[GeminiProvider]:
    provider = GeminiProvider(
        gemini_settings(fake_gemini.base_url), tracer=spans[0].get_tracer("test")
    )
    yield provider
    await provider.aclose()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def openai_settings(base_url: str, **overrides: object) -> LlmSettings:
    """An OpenAI-compatible server with Ollama-style model names, fast timeouts and tiny
    backoff so retry tests take milliseconds."""
    values: dict[str, object] = {
        "provider": "openai",
        "openai_base_url": base_url,
        "strong_model": "qwen2.5:32b",
        "fast_model": "qwen2.5:7b",
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_initial_s": 0.01,
    }
    values.update(overrides)
    return LlmSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def openai(
    fake_openai: FakeOpenAI, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        openai_settings(fake_openai.base_url), tracer=spans[0].get_tracer("test")
    )
    yield provider
    await provider.aclose()
