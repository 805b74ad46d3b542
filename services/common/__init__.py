"""The shared library every Tandem service uses: settings, logging, telemetry, the gRPC
server and client runtime, errors and database access."""

from services.common._channels import channel_options, create_channel, deadline_interceptors
from services.common._db import (
    Database,
    DatabaseSettings,
    Migration,
    apply_migrations,
    embedded_pgvector_is_portable,
    embedded_server_url,
    ensure_tenant,
    load_migrations,
    map_db_error,
    resolve_url,
)
from services.common._deadline import deadline_scope, effective_timeout, remaining
from services.common._errors import (
    DeadlineExceeded,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    TandemError,
    Unauthenticated,
    Unavailable,
    status_for,
)
from services.common._event_loop import run_service
from services.common._interceptors import RuntimeInterceptor, abort_with
from services.common._logging import JsonFormatter, configure_logging
from services.common._observability import (
    Metrics,
    PrivacyFilter,
    fingerprint_sql,
    fingerprint_tree,
)
from services.common._server import GrpcServer, serve
from services.common._settings import Env, ServerSettings, SettingsError, TelemetrySettings
from services.common._telemetry import Telemetry

__all__ = [
    "Database",
    "DatabaseSettings",
    "DeadlineExceeded",
    "Env",
    "FailedPrecondition",
    "FieldViolation",
    "GrpcServer",
    "InvalidArgument",
    "JsonFormatter",
    "Metrics",
    "Migration",
    "NotFound",
    "PermissionDenied",
    "PrivacyFilter",
    "ResourceExhausted",
    "RuntimeInterceptor",
    "ServerSettings",
    "SettingsError",
    "TandemError",
    "Telemetry",
    "TelemetrySettings",
    "Unauthenticated",
    "Unavailable",
    "abort_with",
    "apply_migrations",
    "channel_options",
    "configure_logging",
    "create_channel",
    "deadline_interceptors",
    "deadline_scope",
    "effective_timeout",
    "embedded_pgvector_is_portable",
    "embedded_server_url",
    "ensure_tenant",
    "fingerprint_sql",
    "fingerprint_tree",
    "load_migrations",
    "map_db_error",
    "remaining",
    "resolve_url",
    "run_service",
    "serve",
    "status_for",
]
