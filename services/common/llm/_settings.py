"""LLM configuration, read once from the environment and checked before first use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common._settings import Env, SettingsError

DEFAULT_STRONG_MODEL = "gemini-2.5-pro"
DEFAULT_FAST_MODEL = "gemini-2.5-flash"

PROVIDERS = ("gemini", "openai", "offline")
# How an OpenAI-compatible server is asked for JSON: the output type's JSON Schema in
# ``response_format`` (vLLM, Ollama, llama.cpp server and LM Studio enforce it by
# grammar), JSON mode only, or nothing; the reply is repaired and validated in every mode.
STRUCTURED_MODES = ("json_schema", "json_object", "none")


@dataclass(frozen=True)
class LlmSettings:
    """Which model serves the tiers (Gemini, an OpenAI-compatible server, or none), its
    credentials, tier models and call bounds.

    One provider serves both tiers: the fallback, degraded reasons and telemetry name one
    provider, and a local server holds a large and a small model as easily as Gemini
    does (``LLM_STRONG_MODEL`` / ``LLM_FAST_MODEL`` pick them)."""

    api_key: str | None = None
    base_url: str | None = None
    # None: Gemini when GEMINI_API_KEY is set, else offline (the behaviour before the
    # setting existed).
    provider: str | None = None
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    openai_structured: str = "json_schema"
    openai_stream: bool = False
    strong_model: str = DEFAULT_STRONG_MODEL
    fast_model: str = DEFAULT_FAST_MODEL
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 8.0
    # Prompt-level guardrails; switchable only so their effect can be measured.
    fence_untrusted: bool = True
    restate_rules: bool = True

    def __post_init__(self) -> None:
        if self.provider is not None and self.provider not in PROVIDERS:
            raise SettingsError(
                f"LLM_PROVIDER must be one of {', '.join(PROVIDERS)}, got {self.provider!r}"
            )
        if self.provider == "gemini" and self.api_key is None:
            raise SettingsError("LLM_PROVIDER=gemini needs GEMINI_API_KEY")
        if self.provider == "openai" and self.openai_base_url is None:
            raise SettingsError(
                "LLM_PROVIDER=openai needs OPENAI_BASE_URL (e.g. http://localhost:11434/v1)"
            )
        if self.openai_base_url is not None and not self.openai_base_url.startswith(
            ("http://", "https://")
        ):
            raise SettingsError(
                f"OPENAI_BASE_URL must start with http:// or https://, got {self.openai_base_url!r}"
            )
        if self.openai_structured not in STRUCTURED_MODES:
            raise SettingsError(
                f"OPENAI_STRUCTURED must be one of {', '.join(STRUCTURED_MODES)}, "
                f"got {self.openai_structured!r}"
            )
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise SettingsError(
                f"GEMINI_BASE_URL must start with http:// or https://, got {self.base_url!r}"
            )
        for variable, model in (
            ("LLM_STRONG_MODEL", self.strong_model),
            ("LLM_FAST_MODEL", self.fast_model),
        ):
            if not model.strip() or any(ch.isspace() for ch in model):
                raise SettingsError(f"{variable} must be a model name without spaces")
        if self.timeout_s <= 0:
            raise SettingsError(f"LLM_TIMEOUT_S must be > 0, got {self.timeout_s}")
        if not 0 <= self.max_retries <= 10:
            raise SettingsError(f"LLM_MAX_RETRIES must be between 0 and 10, got {self.max_retries}")
        if self.backoff_initial_s < 0 or self.backoff_max_s < self.backoff_initial_s:
            raise SettingsError("LLM_BACKOFF_S must be >= 0 and no more than the 8 s cap")

    @property
    def selected_provider(self) -> str:
        """``gemini``, ``openai`` or ``offline``: who answers the model roles."""
        if self.provider is not None:
            return self.provider
        return "gemini" if self.api_key is not None else "offline"

    @property
    def gemini_enabled(self) -> bool:
        """Gemini serves the tiers, with the deterministic provider as fallback."""
        return self.selected_provider == "gemini"

    @property
    def openai_enabled(self) -> bool:
        """An OpenAI-compatible server serves the tiers, with the same fallback."""
        return self.selected_provider == "openai"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LlmSettings:
        """Read ``LLM_*``, ``GEMINI_*`` and ``OPENAI_*``; a bad value names its variable.

        With ``LLM_PROVIDER=openai`` the Gemini model names mean nothing to the server:
        ``LLM_STRONG_MODEL`` must name one of its models, and ``LLM_FAST_MODEL`` defaults
        to the same model (a local install often serves one)."""
        env = Env(environ)
        provider = env.get_optional("LLM_PROVIDER")
        provider = provider.lower() if provider is not None else None
        strong_default, fast_default = DEFAULT_STRONG_MODEL, DEFAULT_FAST_MODEL
        if provider == "openai":
            strong = env.get_optional("LLM_STRONG_MODEL")
            if strong is None:
                raise SettingsError(
                    "LLM_STRONG_MODEL must name the server's model when LLM_PROVIDER=openai "
                    "(e.g. qwen2.5:7b on Ollama)"
                )
            strong_default = fast_default = strong
        return cls(
            api_key=env.get_optional("GEMINI_API_KEY"),
            base_url=env.get_optional("GEMINI_BASE_URL"),
            provider=provider,
            openai_base_url=env.get_optional("OPENAI_BASE_URL"),
            openai_api_key=env.get_optional("OPENAI_API_KEY"),
            openai_structured=env.get_str("OPENAI_STRUCTURED", "json_schema").lower(),
            openai_stream=env.get_bool("OPENAI_STREAM", False),
            strong_model=env.get_str("LLM_STRONG_MODEL", strong_default),
            fast_model=env.get_str("LLM_FAST_MODEL", fast_default),
            timeout_s=env.get_float("LLM_TIMEOUT_S", 30.0, minimum=0.001),
            max_retries=env.get_int("LLM_MAX_RETRIES", 3, minimum=0),
            backoff_initial_s=env.get_float("LLM_BACKOFF_S", 0.5, minimum=0.0),
            fence_untrusted=env.get_bool("LLM_GUARD_FENCING", True),
            restate_rules=env.get_bool("LLM_GUARD_RESTATE_RULES", True),
        )

    def prompt_guards(self) -> tuple[str, ...]:
        """The prompt-level guardrail layers in force, as guardrail-report names."""
        return tuple(
            name
            for name, on in (
                ("FENCING", self.fence_untrusted),
                ("RULE_RESTATEMENT", self.restate_rules),
            )
            if on
        )

    def __repr__(self) -> str:
        # The key never reaches a log line through a repr.
        key = "set" if self.api_key else "unset"
        openai_key = "set" if self.openai_api_key else "unset"
        return (
            f"LlmSettings(provider={self.selected_provider}, api_key={key}, "
            f"base_url={self.base_url!r}, openai_base_url={self.openai_base_url!r}, "
            f"openai_api_key={openai_key}, openai_structured={self.openai_structured}, "
            f"strong_model={self.strong_model!r}, fast_model={self.fast_model!r}, "
            f"timeout_s={self.timeout_s}, max_retries={self.max_retries})"
        )
