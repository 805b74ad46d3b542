"""Gateway settings, read once from the environment at start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.common import Deadlines, Env, SettingsError

DEFAULT_PORT = 50051
# The per-tenant token bucket: sustained calls per second and the burst allowed.
DEFAULT_RATE_PER_S = 20.0
DEFAULT_BURST = 40.0
MIB = 1024 * 1024
PEPPER_VARIABLE = "GATEWAY_KEY_PEPPER"
_PEPPER_FILE = Path("secrets") / "gateway-key-pepper"


@dataclass(frozen=True)
class Limits:
    """Request limits the gateway enforces before forwarding; each matches (or is
    stricter than) the internal service's own default, so a caller learns the field name
    from the edge."""

    max_question_chars: int = 4000
    max_query_chars: int = 2000
    max_sql_question_chars: int = 2000
    max_sql_instructions_chars: int = 4000
    max_sql_chars: int = 20_000
    max_batch_documents: int = 256
    max_search_top_k: int = 100
    max_ask_top_k: int = 50
    max_candidate_depth: int = 1000
    max_ef_search: int = 1000
    max_rows: int = 1000
    max_tool_calls: int = 12
    max_filter_ids: int = 1000
    max_filter_values: int = 100
    max_name_chars: int = 256
    # One uploaded file (UploadDocument): the retrieval service's own file limit.
    max_upload_bytes: int = 50 * MIB
    max_catalog_chars: int = 100_000
    max_tables: int = 200


@dataclass(frozen=True)
class UploadSettings:
    """How UploadDocument holds files while they arrive and are handed on.

    A file is kept in memory up to ``memory_bytes``, then spooled to an unlinked file in
    ``spool_dir`` (the system's temporary directory by default). What every caller may
    have in flight (received, not yet answered) is bounded per tenant and in total;
    past either budget the upload is refused RESOURCE_EXHAUSTED, to be retried after
    ``retry_s``. Handing a file to retrieval (one message) costs about twice its size in
    memory while it is sent: at most ``sending_bytes`` of files are sent at once (a larger
    file is sent alone), the rest wait their turn.
    """

    memory_bytes: int = 1 * MIB
    spool_dir: str | None = None
    tenant_bytes: int = 200 * MIB
    total_bytes: int = 1024 * MIB
    sending_bytes: int = 64 * MIB
    retry_s: float = 5.0

    @classmethod
    def from_env(cls, env: Env, max_upload_bytes: int) -> UploadSettings:
        """``GATEWAY_UPLOAD_*``; each budget holds at least one largest file (a file that
        could never fit would be told to retry forever)."""
        tenant = env.get_int("GATEWAY_UPLOAD_TENANT_BYTES", cls.tenant_bytes, minimum=1)
        total = env.get_int("GATEWAY_UPLOAD_TOTAL_BYTES", cls.total_bytes, minimum=1)
        if not max_upload_bytes <= tenant <= total:
            raise SettingsError(
                "need GATEWAY_MAX_UPLOAD_BYTES <= GATEWAY_UPLOAD_TENANT_BYTES <= "
                f"GATEWAY_UPLOAD_TOTAL_BYTES, got {max_upload_bytes} <= {tenant} <= {total}"
            )
        return cls(
            memory_bytes=env.get_int("GATEWAY_UPLOAD_MEMORY_BYTES", cls.memory_bytes, minimum=0),
            spool_dir=env.get_optional("GATEWAY_UPLOAD_SPOOL_DIR"),
            tenant_bytes=tenant,
            total_bytes=total,
            sending_bytes=env.get_int("GATEWAY_UPLOAD_SENDING_BYTES", cls.sending_bytes, minimum=1),
            retry_s=env.get_float("GATEWAY_UPLOAD_RETRY_S", cls.retry_s, minimum=0.001),
        )


@dataclass(frozen=True)
class AuditSettings:
    """The audit trail (``gateway._audit``): on or off, how long a row is kept (the
    periodic purge is the only deletion), and how records reach Postgres — held in a
    bounded buffer (past ``buffer_size`` a record is dropped and counted, never waited
    for) and written in batches of up to ``batch_size`` every ``flush_interval_s``."""

    enabled: bool = True
    retention_days: int = 90
    buffer_size: int = 10_000
    batch_size: int = 500
    flush_interval_s: float = 1.0
    purge_interval_s: float = 3600.0
    app_database_url: str | None = None

    @classmethod
    def from_env(cls, env: Env) -> AuditSettings:
        """``GATEWAY_AUDIT*``."""
        return cls(
            enabled=env.get_bool("GATEWAY_AUDIT", cls.enabled),
            retention_days=env.get_int(
                "GATEWAY_AUDIT_RETENTION_DAYS", cls.retention_days, minimum=1
            ),
            buffer_size=env.get_int("GATEWAY_AUDIT_BUFFER_SIZE", cls.buffer_size, minimum=1),
            batch_size=env.get_int("GATEWAY_AUDIT_BATCH_SIZE", cls.batch_size, minimum=1),
            flush_interval_s=env.get_float(
                "GATEWAY_AUDIT_FLUSH_INTERVAL_S", cls.flush_interval_s, minimum=0.01
            ),
            app_database_url=env.get_optional("GATEWAY_AUDIT_APP_DATABASE_URL"),
        )


@dataclass(frozen=True)
class GatewaySettings:
    """Where the internal services are, the tenant rate limit, deadlines and limits."""

    router_addr: str = "127.0.0.1:50052"
    retrieval_addr: str = "127.0.0.1:50053"
    sql_addr: str = "127.0.0.1:50055"
    rate_per_s: float = DEFAULT_RATE_PER_S
    burst: float = DEFAULT_BURST
    # Deadlines for calls that arrive without one.
    default_deadline_s: float = 30.0
    ingest_deadline_s: float = 300.0
    limits: Limits = Limits()
    # Conversations: on (every Ask belongs to one; off answers every question standalone,
    # for stateless callers and load tests), how long one lives after its last turn, and
    # how much of it a follow-up is resolved against (the newest turns first).
    conversations: bool = True
    conversation_retention_days: int = 30
    conversation_history_turns: int = 4
    conversation_history_chars: int = 4000
    conversation_app_database_url: str | None = None
    # How long a verified key is served from memory (0: every call reads the database).
    # Revocations reach the memory at once, by notification; this bounds the rest.
    key_cache_ttl_s: float = 30.0
    # While the key database is unreachable (a Postgres failover), keys verified before
    # answer from memory this long after the key-change listener was lost (0: refuse).
    key_outage_grace_s: float = 15.0
    uploads: UploadSettings = UploadSettings()
    audit: AuditSettings = AuditSettings()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GatewaySettings:
        """Reads ``*_ADDR``, ``GATEWAY_*`` and ``GRPC_DEFAULT_DEADLINE_S``."""
        env = Env(environ)
        defaults = Limits()
        deadlines = Deadlines.from_env(environ)
        rate_per_s, burst = tenant_quota(env)
        max_upload_bytes = env.get_int(
            "GATEWAY_MAX_UPLOAD_BYTES", defaults.max_upload_bytes, minimum=1
        )
        settings = cls(
            router_addr=env.get_str("ROUTER_ADDR", "127.0.0.1:50052"),
            retrieval_addr=env.get_str("RETRIEVAL_ADDR", "127.0.0.1:50053"),
            sql_addr=env.get_str("SQL_ADDR", "127.0.0.1:50055"),
            rate_per_s=rate_per_s,
            burst=burst,
            default_deadline_s=deadlines.default_s,
            ingest_deadline_s=deadlines.ingest_s,
            limits=Limits(
                max_question_chars=env.get_int(
                    "GATEWAY_MAX_QUESTION_CHARS", defaults.max_question_chars, minimum=1
                ),
                max_query_chars=env.get_int(
                    "GATEWAY_MAX_QUERY_CHARS", defaults.max_query_chars, minimum=1
                ),
                max_sql_question_chars=env.get_int(
                    "GATEWAY_MAX_SQL_QUESTION_CHARS", defaults.max_sql_question_chars, minimum=1
                ),
                max_sql_instructions_chars=env.get_int(
                    "GATEWAY_MAX_SQL_INSTRUCTIONS_CHARS",
                    defaults.max_sql_instructions_chars,
                    minimum=0,
                ),
                max_sql_chars=env.get_int(
                    "GATEWAY_MAX_SQL_CHARS", defaults.max_sql_chars, minimum=1
                ),
                max_batch_documents=env.get_int(
                    "GATEWAY_MAX_BATCH_DOCUMENTS", defaults.max_batch_documents, minimum=1
                ),
                max_upload_bytes=max_upload_bytes,
            ),
            conversations=env.get_bool("GATEWAY_CONVERSATIONS", True),
            conversation_retention_days=env.get_int(
                "GATEWAY_CONVERSATION_RETENTION_DAYS", 30, minimum=1
            ),
            conversation_history_turns=env.get_int(
                "GATEWAY_CONVERSATION_HISTORY_TURNS", 4, minimum=0
            ),
            conversation_history_chars=env.get_int(
                "GATEWAY_CONVERSATION_HISTORY_CHARS", 4000, minimum=0
            ),
            conversation_app_database_url=env.get_optional("GATEWAY_CONVERSATION_APP_DATABASE_URL"),
            key_cache_ttl_s=env.get_float("GATEWAY_KEY_CACHE_TTL_S", 30.0, minimum=0.0),
            key_outage_grace_s=env.get_float("GATEWAY_KEY_OUTAGE_GRACE_S", 15.0, minimum=0.0),
            uploads=UploadSettings.from_env(env, max_upload_bytes),
            audit=AuditSettings.from_env(env),
        )
        return settings

    @property
    def server_deadline_s(self) -> float:
        """The runtime's default and cap: the longest per-RPC default, narrowed per call
        (a caller asking for more gets this much)."""
        return Deadlines(self.default_deadline_s, self.ingest_deadline_s).longest_s


def tenant_quota(env: Env) -> tuple[float, float]:
    """``GATEWAY_RATE_PER_S`` and ``GATEWAY_BURST``: read by the gateway, and by the edge,
    whose per-key limit defaults to them."""
    return (
        env.get_float("GATEWAY_RATE_PER_S", DEFAULT_RATE_PER_S, minimum=0.001),
        env.get_float("GATEWAY_BURST", DEFAULT_BURST, minimum=1.0),
    )


def key_pepper(environ: Mapping[str, str] | None = None) -> bytes:
    """The secret mixed into every stored key HMAC.

    ``GATEWAY_KEY_PEPPER`` (at least 16 bytes) in production. Without it, a random pepper
    is created once under ``TANDEM_DATA_DIR`` (mode 0600) and shared by the gateway and
    ``tandem keys`` on this machine; changing the pepper invalidates every key.
    """
    env = Env(environ)
    value = env.get_optional(PEPPER_VARIABLE)
    if value is not None:
        if len(value.encode()) < 16:
            raise SettingsError(f"{PEPPER_VARIABLE} must be at least 16 bytes")
        return value.encode()
    path = Path(env.get_str("TANDEM_DATA_DIR", ".tandem")) / _PEPPER_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        # Written aside and linked into place: a concurrent starter either wins the link
        # or reads the complete file the winner linked.
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(32).hex().encode())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    pepper = path.read_bytes().strip()
    if len(pepper) < 16:
        raise SettingsError(f"{path} holds a pepper shorter than 16 bytes")
    return pepper
