"""LLM settings from the environment, provider selection, and the offline provider's
refusal to write SQL (the SQL service's own generator does that)."""

from __future__ import annotations

import pytest

from services.common import SettingsError
from services.common.llm import (
    FallbackProvider,
    GenerateSqlRequest,
    IdentifyTablesRequest,
    LlmSettings,
    LlmUnavailable,
    RepairSqlRequest,
    UnderstandSqlRequest,
    create_provider,
)
from services.router.offline import DeterministicProvider
from tests.unit.llm.fix_crm import CRM


def test_defaults_without_a_key_mean_deterministic() -> None:
    settings = LlmSettings.from_env({})
    assert settings.api_key is None and not settings.gemini_enabled
    assert (settings.strong_model, settings.fast_model) == ("gemini-2.5-pro", "gemini-2.5-flash")
    assert isinstance(
        create_provider(settings, offline=DeterministicProvider()), DeterministicProvider
    )


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
    provider = create_provider(settings, offline=DeterministicProvider())
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
        ({"LLM_PROVIDER": "anthropic"}, "LLM_PROVIDER"),
        ({"LLM_PROVIDER": "gemini"}, "GEMINI_API_KEY"),
        ({"LLM_PROVIDER": "openai", "LLM_STRONG_MODEL": "qwen2.5:7b"}, "OPENAI_BASE_URL"),
        ({"LLM_PROVIDER": "openai", "OPENAI_BASE_URL": "http://h:1/v1"}, "LLM_STRONG_MODEL"),
        ({"OPENAI_BASE_URL": "localhost:11434/v1"}, "OPENAI_BASE_URL"),
        ({"OPENAI_STRUCTURED": "grammar"}, "OPENAI_STRUCTURED"),
        ({"OPENAI_STREAM": "sometimes"}, "OPENAI_STREAM"),
    ],
)
def test_bad_values_fail_fast_naming_the_variable(environ: dict[str, str], variable: str) -> None:
    with pytest.raises(SettingsError, match=variable):
        LlmSettings.from_env(environ)


SQL_CALLS = {
    "understand_sql": UnderstandSqlRequest("how many deals closed last quarter?", CRM),
    "identify_tables": IdentifyTablesRequest("how many deals closed last quarter?", CRM),
    "generate_sql": GenerateSqlRequest("how many deals closed last quarter?", CRM),
    "repair_sql": RepairSqlRequest(
        "how many deals?", CRM, "SELECT count(*) FROM deals", 'relation "deals" does not exist'
    ),
}


@pytest.mark.parametrize("role", list(SQL_CALLS))
async def test_offline_provider_leaves_sql_to_the_sql_service(role: str) -> None:
    # One SQL engine: offline, the SQL service's rule-based generator answers; the LLM
    # layer links no schema and builds no intent, it says the role is unavailable.
    provider = create_provider(LlmSettings(), offline=DeterministicProvider())
    with pytest.raises(LlmUnavailable) as caught:
        await getattr(provider, role)(SQL_CALLS[role])
    assert caught.value.cause == "sql_offline"


async def test_provider_openai_reads_its_settings_and_keeps_its_key_out_of_repr() -> None:
    settings = LlmSettings.from_env(
        {
            "LLM_PROVIDER": "OpenAI",
            "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
            "OPENAI_API_KEY": "sk-secret-123",
            "OPENAI_STRUCTURED": "json_object",
            "OPENAI_STREAM": "true",
            "LLM_STRONG_MODEL": "qwen2.5:32b",
            "LLM_FAST_MODEL": "qwen2.5:7b",
            # A Gemini key beside it does not win over the named provider.
            "GEMINI_API_KEY": "g-key",
        }
    )
    assert settings.openai_enabled and not settings.gemini_enabled
    assert settings.openai_structured == "json_object" and settings.openai_stream
    assert (settings.strong_model, settings.fast_model) == ("qwen2.5:32b", "qwen2.5:7b")
    assert "sk-secret-123" not in repr(settings) and "g-key" not in repr(settings)
    provider = create_provider(settings, offline=DeterministicProvider())
    try:
        assert provider.name == "openai+deterministic"
    finally:
        await provider.aclose()


def test_provider_offline_ignores_a_gemini_key() -> None:
    settings = LlmSettings.from_env({"LLM_PROVIDER": "offline", "GEMINI_API_KEY": "k"})
    assert settings.selected_provider == "offline" and not settings.gemini_enabled
    assert isinstance(
        create_provider(settings, offline=DeterministicProvider()), DeterministicProvider
    )
