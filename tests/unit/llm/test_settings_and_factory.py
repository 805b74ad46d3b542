"""LLM settings from the environment, provider selection, and embedding-assisted linking."""

from __future__ import annotations

import logging

import pytest

from services.common import SettingsError
from services.common.llm import (
    DeterministicProvider,
    FallbackProvider,
    IntentKind,
    LlmSettings,
    UnderstandSqlRequest,
    create_provider,
)
from tests.unit.llm.fix_crm import CRM, today


def test_defaults_without_a_key_mean_deterministic() -> None:
    settings = LlmSettings.from_env({})
    assert settings.api_key is None and not settings.gemini_enabled
    assert (settings.strong_model, settings.fast_model) == ("gemini-2.5-pro", "gemini-2.5-flash")
    assert isinstance(create_provider(settings), DeterministicProvider)


def test_prompt_guards_are_on_unless_switched_off_for_measurement() -> None:
    assert LlmSettings.from_env({}).prompt_guards() == ("FENCING", "RULE_RESTATEMENT")
    off = LlmSettings.from_env({"LLM_GUARD_FENCING": "false"})
    assert off.prompt_guards() == ("RULE_RESTATEMENT",)
    assert not off.fence_untrusted
    both = {"LLM_GUARD_FENCING": "0", "LLM_GUARD_RESTATE_RULES": "off"}
    assert LlmSettings.from_env(both).prompt_guards() == ()


async def test_key_selects_gemini_with_deterministic_fallback() -> None:
    settings = LlmSettings.from_env(
        {
            "GEMINI_API_KEY": "k-123",
            "GEMINI_BASE_URL": "http://127.0.0.1:9",
            "LLM_STRONG_MODEL": "gemini-2.5-pro-002",
            "LLM_FAST_MODEL": "gemini-2.5-flash-lite",
            "LLM_TIMEOUT_S": "7.5",
            "LLM_MAX_RETRIES": "1",
        }
    )
    assert settings.timeout_s == 7.5 and settings.max_retries == 1
    assert "k-123" not in repr(settings)
    provider = create_provider(settings)
    try:
        assert isinstance(provider, FallbackProvider)
        assert provider.name == "gemini+deterministic"
    finally:
        await provider.aclose()


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"LLM_TIMEOUT_S": "soon"}, "LLM_TIMEOUT_S"),
        ({"LLM_TIMEOUT_S": "0"}, "LLM_TIMEOUT_S"),
        ({"LLM_MAX_RETRIES": "-1"}, "LLM_MAX_RETRIES"),
        ({"LLM_MAX_RETRIES": "50"}, "LLM_MAX_RETRIES"),
        ({"GEMINI_BASE_URL": "localhost:8080"}, "GEMINI_BASE_URL"),
        ({"LLM_FAST_MODEL": "gemini flash"}, "LLM_FAST_MODEL"),
        ({"LLM_BACKOFF_S": "-2"}, "LLM_BACKOFF_S"),
        ({"LLM_GUARD_FENCING": "maybe"}, "LLM_GUARD_FENCING"),
    ],
)
def test_bad_values_fail_fast_naming_the_variable(environ: dict[str, str], variable: str) -> None:
    with pytest.raises(SettingsError, match=variable):
        LlmSettings.from_env(environ)


class KeywordEmbedder:
    """Vectors from a tiny keyword map: enough to make similarity decide a tie."""

    AXES = (("contact", "humans", "individuals"), ("product", "catalogue"), ("compan",))

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [
            [1.0 if any(k in text.lower() for k in axis) else 0.0 for axis in self.AXES]
            for text in texts
        ]


class BrokenEmbedder:
    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embedding service down")


async def test_embedding_similarity_links_what_words_alone_cannot() -> None:
    question = "how many humans do we know"
    lexical = DeterministicProvider(today=today)
    assert (await lexical.understand_sql(UnderstandSqlRequest(question, CRM))).output.intent is None

    embedder = KeywordEmbedder()
    provider = create_provider(LlmSettings(), embedder, today=today)
    result = await provider.understand_sql(UnderstandSqlRequest(question, CRM))
    intent = result.output.intent
    assert intent is not None and (intent.kind, intent.table) == (IntentKind.COUNT, "contacts")
    # Table descriptions are embedded once per catalog; each question once.
    await provider.understand_sql(UnderstandSqlRequest("how many individuals", CRM))
    assert [len(c) for c in embedder.calls] == [len(CRM.tables), 1, 1]


async def test_embedding_failure_falls_back_to_lexical_linking(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = DeterministicProvider(embedder=BrokenEmbedder(), today=today)
    with caplog.at_level(logging.WARNING):
        result = await provider.understand_sql(
            UnderstandSqlRequest("how many deals closed last quarter?", CRM)
        )
    assert result.output.intent is not None and result.output.intent.table == "opportunities"
    (record,) = caplog.records
    assert record.__dict__["fields"]["cause"] == "ConnectionError"
    assert "deals" not in record.getMessage()
