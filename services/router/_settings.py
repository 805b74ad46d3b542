"""Router settings, read once from the environment at start (fail fast, naming the
variable)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common import Env, SettingsError

DEFAULT_PORT = 50052
MAX_REPLANS = 2
MAX_REWRITES = 2


@dataclass(frozen=True)
class GuardrailSettings:
    """Which of the router's own defensive layers run (each can be switched off to measure
    it). Fencing and the restated rules belong to the LLM layer's prompts and are switched
    there (``LLM_GUARD_FENCING``, ``LLM_GUARD_RESTATE_RULES``); the report lists them too."""

    injection_scan: bool = True
    output_check: bool = True
    citation_check: bool = True


@dataclass(frozen=True)
class RouterSettings:
    """Every knob of the router, with the defaults the contract documents."""

    retrieval_addr: str = "127.0.0.1:50053"
    sql_addr: str = "127.0.0.1:50055"
    max_question_chars: int = 4000
    default_top_k: int = 8
    max_top_k: int = 50
    max_tool_calls: int = 12
    max_rows: int = 1000
    max_filter_document_ids: int = 1000
    min_deadline_s: float = 0.1
    step_timeout_s: float = 10.0
    # Time kept back from execution for synthesis and the output check.
    synthesis_reserve_s: float = 0.25
    max_plan_steps: int = 6
    max_replans: int = MAX_REPLANS
    max_rewrites: int = MAX_REWRITES
    guardrails: GuardrailSettings = GuardrailSettings()
    # Conversation history a follow-up is resolved against: the newest turns, bounded
    # again here whatever the caller sent (the gateway bounds it first).
    max_history_turns: int = 4
    max_history_chars: int = 4000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RouterSettings:
        """Reads ``ROUTER_*``, ``RETRIEVAL_ADDR`` and ``SQL_ADDR``."""
        env = Env(environ)
        replans = env.get_int("ROUTER_MAX_REPLANS", MAX_REPLANS, minimum=0)
        if replans > MAX_REPLANS:
            raise SettingsError(f"ROUTER_MAX_REPLANS must be <= {MAX_REPLANS}, got {replans}")
        rewrites = env.get_int("ROUTER_MAX_REWRITES", MAX_REWRITES, minimum=0)
        if rewrites > MAX_REWRITES:
            raise SettingsError(f"ROUTER_MAX_REWRITES must be <= {MAX_REWRITES}, got {rewrites}")
        max_top_k = env.get_int("ROUTER_MAX_TOP_K", 50, minimum=1)
        default_top_k = env.get_int("ROUTER_DEFAULT_TOP_K", 8, minimum=1)
        if default_top_k > max_top_k:
            raise SettingsError("ROUTER_DEFAULT_TOP_K must not exceed ROUTER_MAX_TOP_K")
        return cls(
            retrieval_addr=env.get_str("RETRIEVAL_ADDR", "127.0.0.1:50053"),
            sql_addr=env.get_str("SQL_ADDR", "127.0.0.1:50055"),
            max_question_chars=env.get_int("ROUTER_MAX_QUESTION_CHARS", 4000, minimum=16),
            default_top_k=default_top_k,
            max_top_k=max_top_k,
            max_tool_calls=env.get_int("ROUTER_MAX_TOOL_CALLS", 12, minimum=1),
            max_rows=env.get_int("ROUTER_MAX_ROWS", 1000, minimum=1),
            min_deadline_s=env.get_float("ROUTER_MIN_DEADLINE_S", 0.1, minimum=0.0),
            step_timeout_s=env.get_float("ROUTER_STEP_TIMEOUT_S", 10.0, minimum=0.01),
            synthesis_reserve_s=env.get_float("ROUTER_SYNTHESIS_RESERVE_S", 0.25, minimum=0.0),
            max_plan_steps=env.get_int("ROUTER_MAX_PLAN_STEPS", 6, minimum=1),
            max_replans=replans,
            max_rewrites=rewrites,
            max_history_turns=env.get_int("ROUTER_MAX_HISTORY_TURNS", 4, minimum=0),
            max_history_chars=env.get_int("ROUTER_MAX_HISTORY_CHARS", 4000, minimum=0),
            guardrails=GuardrailSettings(
                injection_scan=env.get_bool("ROUTER_GUARD_INJECTION_SCAN", True),
                output_check=env.get_bool("ROUTER_GUARD_OUTPUT_CHECK", True),
                citation_check=env.get_bool("ROUTER_GUARD_CITATION_CHECK", True),
            ),
        )
