"""LLM configuration, read once from the environment and checked before first use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common._settings import Env, SettingsError

DEFAULT_STRONG_MODEL = "gemini-2.5-pro"
DEFAULT_FAST_MODEL = "gemini-2.5-flash"


@dataclass(frozen=True)
class LlmSettings:
    """Gemini credentials, tier models and call bounds; no key means deterministic."""

    api_key: str | None = None
    base_url: str | None = None
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
    def gemini_enabled(self) -> bool:
        """A key is set: use Gemini, with the deterministic provider as fallback."""
        return self.api_key is not None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LlmSettings:
        """Read ``GEMINI_*`` and ``LLM_*`` variables; a bad value names its variable."""
        env = Env(environ)
        return cls(
            api_key=env.get_optional("GEMINI_API_KEY"),
            base_url=env.get_optional("GEMINI_BASE_URL"),
            strong_model=env.get_str("LLM_STRONG_MODEL", DEFAULT_STRONG_MODEL),
            fast_model=env.get_str("LLM_FAST_MODEL", DEFAULT_FAST_MODEL),
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
        return (
            f"LlmSettings(api_key={key}, base_url={self.base_url!r}, "
            f"strong_model={self.strong_model!r}, fast_model={self.fast_model!r}, "
            f"timeout_s={self.timeout_s}, max_retries={self.max_retries})"
        )
