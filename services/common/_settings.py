"""Typed settings read once from the environment, failing fast with the variable's name."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass


class SettingsError(ValueError):
    """A configuration variable is malformed; the message names the variable."""


class Env:
    """Reads typed values from an environment mapping (``os.environ`` by default).

    Tests pass a plain dict, so settings never depend on hidden process state.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    def get_str(self, name: str, default: str) -> str:
        value = self._environ.get(name)
        return default if value is None or value == "" else value

    def get_optional(self, name: str) -> str | None:
        """The trimmed value, or None when unset or blank."""
        value = (self._environ.get(name) or "").strip()
        return value or None

    def get_int(
        self, name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        value = self.get_optional_int(name, minimum=minimum, maximum=maximum)
        return default if value is None else value

    def get_optional_int(
        self, name: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        raw = self.get_optional(name)
        if raw is None:
            return None
        try:
            value = int(raw)
        except ValueError:
            raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
        if minimum is not None and value < minimum:
            raise SettingsError(f"{name} must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise SettingsError(f"{name} must be <= {maximum}, got {value}")
        return value

    def get_float(self, name: str, default: float, *, minimum: float | None = None) -> float:
        raw = self.get_optional(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise SettingsError(f"{name} must be a number, got {raw!r}") from None
        # float() accepts "nan" and "inf", which would silently disable a limit.
        if not math.isfinite(value):
            raise SettingsError(f"{name} must be a finite number, got {raw!r}")
        if minimum is not None and value < minimum:
            raise SettingsError(f"{name} must be >= {minimum:g}, got {raw!r}")
        return value

    def get_bool(self, name: str, default: bool) -> bool:
        raw = self.get_optional(name)
        if raw is None:
            return default
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SettingsError(f"{name} must be a boolean (true/false), got {raw!r}")


@dataclass(frozen=True)
class Deadlines:
    """The deadlines the deployment grants, read in this one place: the default for a
    call that arrives without one (``GRPC_DEFAULT_DEADLINE_S``) and ingest's
    (``GATEWAY_INGEST_DEADLINE_S``). The gateway caps what a caller asks for at the
    longest, so no internal call runs longer, and every server keeps a connection past
    its maximum age for that long (``ServerSettings.connection_age_grace_s``)."""

    default_s: float = 30.0
    ingest_s: float = 300.0

    @property
    def longest_s(self) -> float:
        return max(self.default_s, self.ingest_s)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Deadlines:
        env = Env(environ)
        return cls(
            default_s=env.get_float("GRPC_DEFAULT_DEADLINE_S", 30.0, minimum=0.001),
            ingest_s=env.get_float("GATEWAY_INGEST_DEADLINE_S", 300.0, minimum=0.001),
        )


# After its deadline a call still sends its status: the last moment of a connection's
# grace is kept for that.
_LAST_REPLY_S = 1.0


@dataclass(frozen=True)
class ServerSettings:
    """How one service's gRPC server listens, drains and bounds its calls.

    ``longest_deadline_s`` is the longest deadline any call in the deployment gets
    (``Deadlines.longest_s``); ``max_deadline_s``, where set (the gateway, the public
    door), caps what a caller may ask for, so internal calls never run longer.
    """

    service_name: str
    host: str = "127.0.0.1"
    port: int = 0
    grace_period_s: float = 10.0
    max_message_bytes: int = 16 * 1024 * 1024
    keepalive_time_s: int = 30
    keepalive_timeout_s: int = 10
    default_deadline_s: float = 30.0
    max_concurrent_rpcs: int | None = None
    max_connection_age_s: float = 300
    longest_deadline_s: float = Deadlines().longest_s
    max_deadline_s: float | None = None

    @property
    def connection_age_grace_s(self) -> float:
        """How long a connection past its maximum age stays open for the calls it carries:
        a call started just before the server's GOAWAY runs to its deadline. A grace
        shorter than the longest deadline cut ingests midway (issue 46: UNAVAILABLE after
        37 s on a connection 293 s old, with 300 s max age and 30 s grace)."""
        return self.longest_deadline_s + _LAST_REPLY_S

    @classmethod
    def from_env(
        cls, service_name: str, default_port: int, environ: Mapping[str, str] | None = None
    ) -> ServerSettings:
        """Read ``<SERVICE>_HOST``/``<SERVICE>_PORT`` plus the shared ``GRPC_*`` knobs."""
        env = Env(environ)
        deadlines = Deadlines.from_env(environ)
        prefix = service_name.upper()
        return cls(
            service_name=service_name,
            host=env.get_str(f"{prefix}_HOST", "127.0.0.1"),
            port=env.get_int(f"{prefix}_PORT", default_port, minimum=0, maximum=65535),
            grace_period_s=env.get_float("GRPC_GRACE_PERIOD_S", 10.0, minimum=0.0),
            max_message_bytes=env.get_int("GRPC_MAX_MESSAGE_BYTES", 16 * 1024 * 1024, minimum=1024),
            keepalive_time_s=env.get_int("GRPC_KEEPALIVE_TIME_S", 30, minimum=1),
            keepalive_timeout_s=env.get_int("GRPC_KEEPALIVE_TIMEOUT_S", 10, minimum=1),
            default_deadline_s=deadlines.default_s,
            max_connection_age_s=env.get_float("GRPC_MAX_CONNECTION_AGE_S", 300, minimum=0.1),
            longest_deadline_s=deadlines.longest_s,
        )


@dataclass(frozen=True)
class TelemetrySettings:
    """Where traces and metrics go; ``otlp_endpoint`` unset means in-process only."""

    service_name: str
    otlp_endpoint: str | None = None
    log_level: str = "INFO"
    export_timeout_s: float = 5.0
    # The local span store for ``tandem trace``: unset means no files are written.
    trace_dir: str | None = None
    trace_max_bytes: int = 16 * 1024 * 1024

    @classmethod
    def from_env(
        cls, service_name: str, environ: Mapping[str, str] | None = None
    ) -> TelemetrySettings:
        env = Env(environ)
        level = env.get_str("LOG_LEVEL", "INFO").upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise SettingsError(f"LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {level!r}")
        return cls(
            service_name=service_name,
            otlp_endpoint=env.get_optional("OTEL_EXPORTER_OTLP_ENDPOINT"),
            log_level=level,
            export_timeout_s=env.get_float("OTEL_EXPORT_TIMEOUT_S", 5.0, minimum=0.1),
            trace_dir=env.get_optional("TANDEM_TRACE_DIR"),
            trace_max_bytes=env.get_int(
                "TANDEM_TRACE_MAX_BYTES", 16 * 1024 * 1024, minimum=64 * 1024
            ),
        )
