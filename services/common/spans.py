"""The span vocabulary every service records under: attribute keys, the node span helper,
statement fingerprints and the metrics wrapper.

One public face for what services and tools need from ``_observability`` (whose privacy
filter and exporter wiring stay private): a key named here means the same thing in every
service's spans, so a trace reads the same across the stack.
"""

from services.common._observability import (
    CACHE_HITS,
    CACHE_MISSES,
    CHARS,
    CHUNKS,
    COUNT,
    DEGRADED,
    DEGRADED_REASON,
    GATE_RULES,
    HITS,
    KIND,
    LLM_COST_USD,
    LLM_DEGRADED,
    LLM_INPUT_TOKENS,
    LLM_MODEL,
    LLM_OUTPUT_TOKENS,
    LLM_ROLE,
    LLM_TIER,
    MODEL,
    SQL_FINGERPRINT,
    TABLES,
    Metrics,
    fingerprint_tree,
    node_span,
)

__all__ = [
    "CACHE_HITS",
    "CACHE_MISSES",
    "CHARS",
    "CHUNKS",
    "COUNT",
    "DEGRADED",
    "DEGRADED_REASON",
    "GATE_RULES",
    "HITS",
    "KIND",
    "LLM_COST_USD",
    "LLM_DEGRADED",
    "LLM_INPUT_TOKENS",
    "LLM_MODEL",
    "LLM_OUTPUT_TOKENS",
    "LLM_ROLE",
    "LLM_TIER",
    "MODEL",
    "SQL_FINGERPRINT",
    "TABLES",
    "Metrics",
    "fingerprint_tree",
    "node_span",
]
