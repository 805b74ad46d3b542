"""The edge: nginx in front of the gateway, refusing floods before Python sees them.

The gateway's event loop serves every tenant; even its cheapest refusal (the first
interceptor, about 0.3 ms of CPU) is paid on that one loop. The edge refuses in compiled
code in another process, at about a quarter of that: each API key is held to the quota
(by default the gateway's per-tenant rate and burst), in front of the gateway's exact
per-tenant buckets, which stay the authority (a tenant with several keys, or several
edge replicas, still gets exactly its quota from the gateway).

The nginx configuration is one template, ``infra/edge/tandem-edge.conf.template``, filled
here for local runs and tests and by the official nginx image (envsubst) in compose and
Kubernetes. Its refusals are the gateway's own rich statuses, precomputed: a caller
cannot tell which layer refused, only that it should come back after RetryInfo's delay.

The edge also serves the playground page (``web/playground``, built by ``make web`` into
``PLAYGROUND_DIR``) at ``/`` as static files under a strict Content-Security-Policy, so
a browser needs nothing but the edge's one address.
"""

from __future__ import annotations

import base64
import math
import os
import shutil
import string
import sys
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from google.rpc import status_pb2

from gateway._admission import malformed_authorization
from gateway._quota import quota_exceeded
from gateway._settings import DEFAULT_BURST, DEFAULT_RATE_PER_S, tenant_quota
from gateway._settings import DEFAULT_PORT as GATEWAY_PORT
from services.common import Env, InvalidArgument, SettingsError, Unavailable, status_for
from services.rest import DEFAULT_PORT as REST_PORT
from services.rest import status_json

DEFAULT_PORT = 50050
TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "edge" / "tandem-edge.conf.template"
BINARY_NAME = "tandem-nginx"
UNAVAILABLE_MESSAGE = "gateway unavailable"
ACCESS_LOG = "access.log"
# Where `make web` (scripts/build_web.sh) puts the playground page; EDGE_PLAYGROUND_DIR
# names another directory (containers mount it).
PLAYGROUND_DIR = Path(__file__).resolve().parents[2] / "web" / "playground" / "dist"


@dataclass(frozen=True)
class EdgeSettings:
    """Where the edge listens, where the gateway is, and the per-key limit."""

    listen: str = f"0.0.0.0:{DEFAULT_PORT}"
    upstream: str = f"127.0.0.1:{GATEWAY_PORT}"
    # The HTTP/JSON face (services.rest) behind /v1 and /openapi.json.
    rest_upstream: str = f"127.0.0.1:{REST_PORT}"
    rate_per_s: float = DEFAULT_RATE_PER_S
    burst: int = math.ceil(DEFAULT_BURST)
    # The gateway's own quota: refusals tell the caller to wait one of its intervals.
    quota_rate_per_s: float = DEFAULT_RATE_PER_S
    workers: int = 1
    zone_size: str = "10m"
    grace_s: float = 10.0
    nginx: str | None = None
    playground_dir: str = str(PLAYGROUND_DIR)
    # A local access log file is rotated past this size, keeping this many old files
    # (``access.log.1`` the newest), checked this often: at most (keep + 1) x max_bytes
    # on disk, plus what one check interval writes. Containers log to stdout instead.
    access_log_max_bytes: int = 16 * 1024 * 1024
    access_log_keep: int = 3
    access_log_check_s: float = 1.0

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EdgeSettings:
        """Reads ``EDGE_*``, ``GATEWAY_ADDR``, ``REST_ADDR`` and the gateway's
        ``GATEWAY_RATE_PER_S`` / ``GATEWAY_BURST`` (the edge's defaults: a key gets its
        tenant's quota)."""
        env = Env(environ)
        quota, burst = tenant_quota(env)
        host = env.get_str("EDGE_HOST", "0.0.0.0")
        port = env.get_int("EDGE_PORT", DEFAULT_PORT, minimum=1, maximum=65535)
        rate = env.get_float("EDGE_RATE_PER_S", quota, minimum=0.017)
        if rate < quota:
            raise SettingsError(
                f"EDGE_RATE_PER_S must be >= GATEWAY_RATE_PER_S ({quota:g}), got {rate:g}: "
                "the edge would refuse calls the gateway's quota admits"
            )
        playground = env.get_str("EDGE_PLAYGROUND_DIR", str(PLAYGROUND_DIR))
        if not playground.startswith("/") or any(c in playground for c in '"$\\;{}\n'):
            # It goes into an nginx string, where `$` starts a variable and `"` ends it.
            raise SettingsError(
                'EDGE_PLAYGROUND_DIR must be an absolute path without any of " $ \\ ; { }, '
                f"got {playground!r}"
            )
        return cls(
            listen=f"{host}:{port}",
            upstream=env.get_str("GATEWAY_ADDR", cls.upstream),
            rest_upstream=env.get_str("REST_ADDR", cls.rest_upstream),
            rate_per_s=rate,
            burst=env.get_int("EDGE_BURST", math.ceil(burst), minimum=0),
            quota_rate_per_s=quota,
            workers=env.get_int("EDGE_WORKERS", 1, minimum=1, maximum=64),
            grace_s=env.get_float("GRPC_GRACE_PERIOD_S", 10.0, minimum=0.0),
            nginx=env.get_optional("EDGE_NGINX"),
            playground_dir=playground,
            access_log_max_bytes=env.get_int(
                "EDGE_ACCESS_LOG_MAX_BYTES", cls.access_log_max_bytes, minimum=1024
            ),
            access_log_keep=env.get_int("EDGE_ACCESS_LOG_KEEP", cls.access_log_keep, minimum=1),
            access_log_check_s=env.get_float(
                "EDGE_ACCESS_LOG_CHECK_S", cls.access_log_check_s, minimum=0.05
            ),
        )


def _status_header(status_bytes: bytes) -> str:
    # gRPC's -bin headers are base64; padding is optional and left out, as gRPC does.
    return base64.b64encode(status_bytes).decode("ascii").rstrip("=")


def _grpc_message(text: str) -> str:
    """grpc-message is percent-encoded (gRPC over HTTP/2)."""
    # Also "$": the value goes into an nginx string, where "$" starts a variable.
    return urllib.parse.quote(text, safe=" !#&'()*+,-./:;<=>?@[]^_`{|}~").replace(" ", "%20")


def _nginx_json(status: status_pb2.Status) -> str:
    """google.rpc.Status JSON as the HTTP face writes it, made safe inside a single-quoted
    nginx string: ``$`` (a variable there) as JSON's ``\\u0024``, then backslashes and
    quotes escaped for nginx, which takes them out again."""
    text = status_json(status).decode().replace("$", "\\u0024")
    return text.replace("\\", "\\\\").replace("'", "\\'")


def refusal_variables(quota_rate_per_s: float) -> dict[str, str]:
    """The precomputed replies: over quota, the gateway unreachable, and an
    authorization header in another form than the gateway's one (or a second one); as
    gRPC trailers-only replies and, for the HTTP face's paths, as google.rpc.Status JSON
    (``Retry-After``: RetryInfo's delay in whole seconds)."""
    wait_s = max(0.001, math.ceil(1000.0 / quota_rate_per_s) / 1000.0)
    over = status_for(quota_exceeded(wait_s))
    down = status_for(Unavailable(UNAVAILABLE_MESSAGE, retry_after_s=1.0))
    malformed = status_for(malformed_authorization("malformed authorization header"))
    duplicate = status_for(malformed_authorization("more than one authorization header"))
    bad_request = status_for(
        InvalidArgument.field(
            "request",
            "malformed HTTP request (a repeated header such as Authorization, or a bad line)",
            reason="REQUEST_MALFORMED",
        )
    )
    return {
        "EDGE_MALFORMED_MESSAGE": _grpc_message(malformed.message),
        "EDGE_MALFORMED_STATUS": _status_header(malformed.SerializeToString()),
        "EDGE_DUPLICATE_MESSAGE": _grpc_message(duplicate.message),
        "EDGE_DUPLICATE_STATUS": _status_header(duplicate.SerializeToString()),
        "EDGE_QUOTA_MESSAGE": _grpc_message(over.message),
        "EDGE_QUOTA_STATUS": _status_header(over.SerializeToString()),
        "EDGE_UNAVAILABLE_MESSAGE": _grpc_message(down.message),
        "EDGE_UNAVAILABLE_STATUS": _status_header(down.SerializeToString()),
        "EDGE_QUOTA_JSON": _nginx_json(over),
        "EDGE_QUOTA_RETRY_AFTER": str(max(1, math.ceil(wait_s))),
        "EDGE_UNAVAILABLE_JSON": _nginx_json(down),
        "EDGE_MALFORMED_JSON": _nginx_json(malformed),
        "EDGE_BAD_REQUEST_JSON": _nginx_json(bad_request),
    }


def _nginx_rate(rate_per_s: float) -> str:
    # nginx counts in requests per second or per minute; per minute keeps fractions.
    per_minute = max(1, round(rate_per_s * 60))
    return f"{per_minute}r/m"


def template_variables(settings: EdgeSettings, access_log: str) -> dict[str, str]:
    """Every ``${EDGE_*}`` the template names, for these settings."""
    return {
        "EDGE_LISTEN": settings.listen,
        "EDGE_UPSTREAM": settings.upstream,
        "EDGE_REST_UPSTREAM": settings.rest_upstream,
        "EDGE_RATE": _nginx_rate(settings.rate_per_s),
        "EDGE_BURST": str(settings.burst),
        "EDGE_ZONE_SIZE": settings.zone_size,
        "EDGE_ACCESS_LOG": access_log,
        "EDGE_PLAYGROUND_DIR": settings.playground_dir.rstrip("/") or "/",
        **refusal_variables(settings.quota_rate_per_s),
    }


def render(variables: Mapping[str, str], template: str | None = None) -> str:
    """The template with ``variables`` filled in; nginx's own ``$names`` are left as they
    are (as envsubst does with only these variables defined). A ``${EDGE_*}`` left unfilled
    is an error, not a broken config."""
    text = TEMPLATE.read_text(encoding="utf-8") if template is None else template
    filled = string.Template(text).safe_substitute(variables)
    missing = sorted(
        {
            name
            for match in string.Template.pattern.finditer(filled)
            if (name := match.group("braced") or "").startswith("EDGE_")
        }
    )
    if missing:
        raise SettingsError(f"edge template variables without a value: {', '.join(missing)}")
    return filled


def main_config(settings: EdgeSettings, run_dir: Path, http_config: Path) -> str:
    """nginx's main configuration for a local run: one master in the foreground, its
    files under ``run_dir``, the http context from ``http_config``."""
    return "\n".join(
        [
            f"worker_processes {settings.workers};",
            "daemon off;",
            f"pid {run_dir / 'nginx.pid'};",
            "error_log stderr warn;",
            # A graceful stop (SIGQUIT) lets calls in flight finish, then closes.
            f"worker_shutdown_timeout {max(1, math.ceil(settings.grace_s))}s;",
            "events { worker_connections 8192; }",
            "http {",
            f"  client_body_temp_path {run_dir / 'client_body'};",
            f"  proxy_temp_path {run_dir / 'proxy'};",
            f"  include {http_config};",
            "}",
            "",
        ]
    )


def run_dir(data_dir: Path, port: int) -> Path:
    """Where a local edge keeps its configuration, pid and access log (``ACCESS_LOG``):
    one directory per port under the data directory (``$TANDEM_DATA_DIR/edge/<port>``)."""
    return (data_dir / "edge" / str(port)).resolve()


# The access log's buffer in tandem-edge.conf.template (``access_log … buffer=64k``): what
# nginx writes to the log at once.
NGINX_LOG_BUFFER = 64 * 1024


@dataclass(frozen=True)
class AccessLogRotation:
    """Size-based rotation of a local access log, done by the edge's launcher.

    nginx writes the log but never rotates it (a flood writes about 100 bytes a call:
    58 MB in ten minutes was seen). Past ``max_bytes`` the old files shift up (the oldest
    of ``keep`` is dropped), the log is copied to ``access.log.1`` and emptied in place
    (logrotate's copytruncate). nginx appends (O_APPEND) to the file it opened, so it
    goes on writing at the start of the emptied file without being told: no reopen
    signal, which a root-started nginx's workers (another user) could not obey in a
    private directory. A line written between the copy and the truncation is lost.
    """

    path: Path
    max_bytes: int
    keep: int

    @classmethod
    def of(cls, access_log: str, settings: EdgeSettings) -> AccessLogRotation | None:
        """The rotation of ``access_log``; None where the log is not a regular file of
        ours to rotate (``/dev/stdout`` in containers, ``off``, a pipe)."""
        if access_log == "off" or access_log.startswith("/dev/"):
            return None
        path = Path(access_log)
        if path.exists() and not path.is_file():
            return None
        return cls(path, settings.access_log_max_bytes, settings.access_log_keep)

    def old(self, n: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{n}")

    def due(self) -> bool:
        try:
            return self.path.stat().st_size >= self.max_bytes
        except FileNotFoundError:
            return False

    def rotate(self) -> None:
        """Shift the old files up by one, copy the log to ``.1`` and empty it.

        Each old file keeps at most ``max_bytes`` and one nginx buffer
        (:data:`NGINX_LOG_BUFFER`), from the first whole line of the log's tail: under
        a flood nginx's workers can flush several buffers between two checks (on a fast
        machine three, 196 KB, were seen in one check's interval), and what the files
        keep must stay bounded whatever the check's lag. The older lines of such a flood
        are dropped, as the lines between the copy and the truncation are."""
        for n in range(self.keep, 1, -1):
            if self.old(n - 1).exists():
                os.replace(self.old(n - 1), self.old(n))
        keep = self.max_bytes + NGINX_LOG_BUFFER
        with self.path.open("rb") as log, self.old(1).open("wb") as out:
            size = os.fstat(log.fileno()).st_size
            if size > keep:
                log.seek(size - keep - 1)
                log.readline()  # the rest of a cut line (or the newline before a whole one)
            out.write(log.read(max(0, size - log.tell())))
        os.truncate(self.path, 0)


def nginx_binary(settings: EdgeSettings | None = None) -> Path | None:
    """The nginx to run: ``EDGE_NGINX``, else the one ``make edge`` built into the
    virtualenv, else ``nginx`` on PATH (it needs HTTP/2 and the gRPC proxy)."""
    if settings is not None and settings.nginx:
        return Path(settings.nginx)
    built = Path(sys.prefix) / "bin" / BINARY_NAME
    if built.exists():
        return built
    found = shutil.which("nginx")
    return Path(found) if found else None


__all__ = [
    "ACCESS_LOG",
    "DEFAULT_PORT",
    "NGINX_LOG_BUFFER",
    "PLAYGROUND_DIR",
    "TEMPLATE",
    "AccessLogRotation",
    "EdgeSettings",
    "main_config",
    "nginx_binary",
    "refusal_variables",
    "render",
    "run_dir",
    "template_variables",
]
