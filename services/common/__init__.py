"""The shared library every Tandem service uses: settings, logging, telemetry, the gRPC
server and client runtime, errors and database access."""

from services.common._channels import (
    channel_options,
    create_channel,
    deadline_interceptors,
    tenant_token_interceptors,
)
from services.common._db import (
    DATABASE_UNAVAILABLE,
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
from services.common._language import (
    ENGLISH,
    LANGUAGE_UNSUPPORTED,
    Language,
    detect_language,
    english_only_message,
    load_language_model,
)
from services.common._logging import JsonFormatter, configure_logging
from services.common._mtls import (
    CALLERS,
    PLAINTEXT_VARIABLE,
    TLS_DIR_VARIABLE,
    CallerGuard,
    Trust,
    peer_identity,
    tls_directory,
)
from services.common._observability import (
    Metrics,
    PrivacyFilter,
    fingerprint_sql,
    fingerprint_tree,
)
from services.common._pki import (
    IDENTITIES,
    Authority,
    Credentials,
    ensure_directory,
    load_credentials,
    save_credentials,
    write_bundles,
)
from services.common._server import GrpcServer, serve
from services.common._settings import Env, ServerSettings, SettingsError, TelemetrySettings
from services.common._spanstore import build_tree, load_trace, render_tree, store_files
from services.common._store import TenantStore, role_conninfo
from services.common._telemetry import Telemetry
from services.common._tenant_token import (
    TENANT_TOKEN_HEADER,
    TenantSigner,
    TenantVerifier,
    current_token,
)
from services.common._text import (
    control_character_problem,
    control_character_violations,
    json_control_problem,
)
from services.common._writes import (
    READ_ONLY_REASON,
    WriteRequest,
    read_only_message,
    write_request,
)

__all__ = [
    "CALLERS",
    "DATABASE_UNAVAILABLE",
    "ENGLISH",
    "IDENTITIES",
    "LANGUAGE_UNSUPPORTED",
    "PLAINTEXT_VARIABLE",
    "READ_ONLY_REASON",
    "TENANT_TOKEN_HEADER",
    "TLS_DIR_VARIABLE",
    "Authority",
    "CallerGuard",
    "Credentials",
    "Database",
    "DatabaseSettings",
    "DeadlineExceeded",
    "Env",
    "FailedPrecondition",
    "FieldViolation",
    "GrpcServer",
    "InvalidArgument",
    "JsonFormatter",
    "Language",
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
    "TenantSigner",
    "TenantStore",
    "TenantVerifier",
    "Trust",
    "Unauthenticated",
    "Unavailable",
    "WriteRequest",
    "abort_with",
    "apply_migrations",
    "build_tree",
    "channel_options",
    "configure_logging",
    "control_character_problem",
    "control_character_violations",
    "create_channel",
    "current_token",
    "deadline_interceptors",
    "deadline_scope",
    "detect_language",
    "effective_timeout",
    "embedded_pgvector_is_portable",
    "embedded_server_url",
    "english_only_message",
    "ensure_directory",
    "ensure_tenant",
    "fingerprint_sql",
    "fingerprint_tree",
    "json_control_problem",
    "load_credentials",
    "load_language_model",
    "load_migrations",
    "load_trace",
    "map_db_error",
    "peer_identity",
    "read_only_message",
    "remaining",
    "render_tree",
    "resolve_url",
    "role_conninfo",
    "run_service",
    "save_credentials",
    "serve",
    "status_for",
    "store_files",
    "tenant_token_interceptors",
    "tls_directory",
    "write_bundles",
    "write_request",
]
