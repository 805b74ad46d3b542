"""The real router stack: embedded Postgres, the real model, real servers on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from services.common.llm import (
    FallbackProvider,
    GeminiProvider,
    LlmProvider,
    LlmSettings,
    create_provider,
)
from services.router.offline import DeterministicProvider
from services.sql import Warehouse, ensure_warehouse
from tests.fakes.gemini import FakeGemini
from tests.fakes.openai import FakeOpenAI
from tests.integration.retrieval.stack import ingest, new_tenant
from tests.integration.router.corpus import documents
from tests.integration.router.stack import Engines, RouterStack, start_engines, start_router


@pytest.fixture(scope="session")
def router_warehouse(pg_url: str) -> Warehouse:
    return asyncio.run(ensure_warehouse(pg_url))


@pytest.fixture
async def engines(pg_url, router_warehouse, embedding, telemetry_sink) -> AsyncIterator[Engines]:
    running = await start_engines(
        pg_url,
        router_warehouse.reader_url,
        embedding.server.address,
        telemetry_sink("engines").telemetry,
    )
    yield running
    await running.close()


@pytest.fixture
async def tenant(pg_url: str, engines: Engines) -> str:
    """A fresh tenant with the router corpus ingested."""
    name = new_tenant(pg_url, "router")
    await ingest(engines.retrieval_stub, name, documents())
    return name


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


def gemini_provider(fake: FakeGemini) -> LlmProvider:
    settings = LlmSettings(api_key="test-key", base_url=fake.base_url, timeout_s=5.0, max_retries=0)
    return FallbackProvider(GeminiProvider(settings), DeterministicProvider())


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def openai_provider(base_url: str, *, stream: bool = False) -> LlmProvider:
    """The provider the router builds from its environment for a local server (Ollama's
    model names), with the rules as fallback: the wiring a deployment gets."""
    environ = {
        "LLM_PROVIDER": "openai",
        "OPENAI_BASE_URL": base_url,
        "LLM_STRONG_MODEL": "qwen2.5:32b",
        "LLM_FAST_MODEL": "qwen2.5:7b",
        "LLM_TIMEOUT_S": "5",
        "LLM_MAX_RETRIES": "0",
        "OPENAI_STREAM": "true" if stream else "false",
    }
    return create_provider(LlmSettings.from_env(environ), offline=DeterministicProvider())


@pytest.fixture
async def router(engines: Engines, telemetry_sink) -> AsyncIterator[RouterStack]:
    stack = await start_router(engines, telemetry_sink("router").telemetry, DeterministicProvider())
    yield stack
    await stack.close()
