"""The HTTP face's settings, read once at start from the environment (fail fast, naming
the variable). Under ``tandem run`` the launcher sets ``REST_HOST`` / ``REST_PORT`` and
``GATEWAY_ADDR`` as it does for every process."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common import Env, TelemetrySettings

DEFAULT_PORT = 50056
DEFAULT_GATEWAY = "127.0.0.1:50051"
# The gateway's own gRPC message limit (16 MiB): a JSON body is at least as long as the
# message it becomes, so a longer one could never pass.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
# A multipart upload streams to the gateway, which refuses a file past its own limit
# (GATEWAY_MAX_UPLOAD_BYTES, 50 MiB by default) with UPLOAD_TOO_LARGE; this bounds what
# the face reads (and spools to disk) before the gateway's answer comes.
DEFAULT_MAX_UPLOAD_BYTES = 64 * 1024 * 1024
# `x-tandem-timeout` larger than this is refused (the gateway's longest default is 300 s).
MAX_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class RestSettings:
    """Where the face listens, where the gateway is, and how much a request may send."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    gateway: str = DEFAULT_GATEWAY
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RestSettings:
        """Reads ``REST_HOST``, ``REST_PORT``, ``GATEWAY_ADDR``, ``REST_MAX_BODY_BYTES``,
        ``REST_MAX_UPLOAD_BYTES`` and ``LOG_LEVEL``."""
        env = Env(environ)
        return cls(
            host=env.get_str("REST_HOST", cls.host),
            port=env.get_int("REST_PORT", DEFAULT_PORT, minimum=1, maximum=65535),
            gateway=env.get_str("GATEWAY_ADDR", DEFAULT_GATEWAY),
            max_body_bytes=env.get_int("REST_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, minimum=1024),
            max_upload_bytes=env.get_int(
                "REST_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES, minimum=1024
            ),
            log_level=TelemetrySettings.from_env("rest", environ).log_level,
        )
