"""``tandem run`` as a new user runs it: a fresh data directory, the command in the
background, the printed key and example commands used from another process, Ctrl-C, and
nothing left running. A second run on the same directory reuses the key, skips the demo
load, restarts a service that dies (saying so, with the tail of its log), starts a killed
Postgres again, and leaves nothing running when it is itself killed outright."""

from __future__ import annotations

import json
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import psutil
import pytest

from services.cli._run import SERVICES, log_tail
from services.common import IDENTITIES, load_credentials
from services.launch import wait_serving
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import sql_service_pb2 as spb
from tandem.v1 import sql_service_pb2_grpc as spb_grpc
from tests.processes import clean_environ, free_ports, model_dir

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TANDEM = Path(sys.executable).with_name("tandem")
START_TIMEOUT_S = 300.0


@dataclass
class RunSession:
    """One ``tandem run`` in the background and everything it printed so far."""

    proc: subprocess.Popen[str]
    env: dict[str, str]
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)
    _reader: threading.Thread | None = None

    def __post_init__(self) -> None:
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, pattern: str, timeout_s: float = START_TIMEOUT_S) -> re.Match[str]:
        """The first printed line matching ``pattern`` (lines already seen included)."""
        regex = re.compile(pattern)
        for line in self.lines:
            if match := regex.search(line):
                return match
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                printed = self._queue.get(timeout=remaining)
            except queue.Empty:
                break
            if printed is None:
                break
            self.lines.append(printed)
            if match := regex.search(printed):
                return match
        logs = Path(self.env["TANDEM_DATA_DIR"]) / "logs"
        tails = "".join(
            f"\n--- {log.name} ---\n{log_tail(log)}" for log in sorted(logs.glob("*.log"))
        )
        raise AssertionError(f"never printed {pattern!r}; output:\n{self.output()}{tails}")

    def finish(self, timeout_s: float = 90.0) -> int:
        code = self.proc.wait(timeout=timeout_s)
        while True:
            rest = self._queue.get(timeout=10)
            if rest is None:
                return code
            self.lines.append(rest)

    def close(self) -> None:
        """Release the pipe once the reader has drained it."""
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def output(self) -> str:
        return "\n".join(self.lines)

    def children(self) -> dict[str, psutil.Process]:
        """The service processes by name (from their command lines)."""
        found: dict[str, psutil.Process] = {}
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            with_args = " ".join(child.cmdline())
            for spec in SERVICES:
                if with_args.endswith(f"-m {spec.module}"):
                    found[spec.name] = child
        return found


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tandem-run")


@pytest.fixture(scope="module")
def run_env(data_dir: Path) -> dict[str, str]:
    """A new user's environment, on ports free on this machine (a default-port run may be
    up elsewhere here) and with the already assembled model (no download in tests)."""
    env = clean_environ()
    env["TANDEM_DATA_DIR"] = str(data_dir)
    env["EMBEDDING_MODEL_PATH"] = str(model_dir())
    env["GRPC_GRACE_PERIOD_S"] = "5"
    for spec, port in zip(SERVICES, free_ports(len(SERVICES)), strict=True):
        env[spec.port_variable] = str(port)
    return env


@pytest.fixture
def session(run_env: dict[str, str]) -> Iterator[RunSession]:
    proc = subprocess.Popen(
        [str(TANDEM), "run"],
        env=run_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    running = RunSession(proc, run_env)
    yield running
    if proc.poll() is None:
        # A failed test: stop it the way a user would, then make sure.
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            proc.wait()
    running.close()


def cli(env: dict[str, str], command: str, api_key: str, gateway: str) -> str:
    argv = shlex.split(command)
    assert argv[0] == "tandem"
    result = subprocess.run(
        [str(TANDEM), *argv[1:]],
        env={**env, "TANDEM_API_KEY": api_key, "TANDEM_GATEWAY": gateway},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def exited(pid: int) -> bool:
    """Gone, or a zombie: the daemonised postmaster's parent is init, which may reap late."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def postmaster_pid(data_dir: Path) -> int | None:
    pidfile = data_dir / "pg" / "postmaster.pid"
    return int(pidfile.read_text().split()[0]) if pidfile.exists() else None


def test_tandem_run_on_a_fresh_directory_serves_the_printed_examples_and_stops_on_ctrl_c(
    session: RunSession, data_dir: Path, run_env: dict[str, str]
):
    api_key = session.wait_for(r"export TANDEM_API_KEY=(tdm_\S+)").group(1)
    gateway = session.wait_for(r"export TANDEM_GATEWAY=(\S+)").group(1)
    assert gateway == f"127.0.0.1:{run_env['GATEWAY_PORT']}"
    edge = session.wait_for(r"call the edge at (\S+) ").group(1)
    assert edge == f"127.0.0.1:{run_env['EDGE_PORT']}"
    session.wait_for(r"Ctrl-C stops every service")
    output = session.output()
    assert re.search(r"demo\s+140 documents loaded", output), output
    for spec in SERVICES:
        assert re.search(rf"{spec.name}\s+SERVING", output), output
    examples = [line.strip() for line in session.lines if line.startswith("  tandem ")]
    asks = [e for e in examples if e.startswith("tandem ask")]
    assert len(asks) == 3 and any(e.startswith("tandem search") for e in examples)

    countable = cli(session.env, asks[0], api_key, gateway)
    assert "Citations:" in countable and "Route: sql" in countable, countable

    # The front door answers the same question the same way.
    def untimed(text: str) -> str:
        # timings and each ask's new conversation id differ from run to run
        text = re.sub(r"\d+ ms", "", text)
        return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)

    assert untimed(cli(session.env, asks[0], api_key, edge)) == untimed(countable)

    # The internal ports take mutual-TLS callers only: the CA and every certificate were
    # issued on this first start (keys private), and a plaintext caller on the SQL port
    # (the reproduction: ExecuteSql for another tenant, no key) reads nothing.
    assert re.search(r"mTLS\s+issued 6\s", output), output
    tls = data_dir / "tls"
    assert {p.name for p in tls.glob("*.key")} == {"ca.key"} | {f"{n}.key" for n in IDENTITIES}
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in tls.glob("*.key"))
    with (
        grpc.insecure_channel(f"127.0.0.1:{run_env['SQL_PORT']}") as plain,
        pytest.raises(grpc.RpcError) as refused,
    ):
        spb_grpc.SqlServiceStub(plain).ExecuteSql(
            spb.ExecuteSqlRequest(tenant_id="demo", sql="SELECT 1"), timeout=5
        )
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE

    key_file = data_dir / "demo-api-key"
    assert key_file.read_text().strip() == api_key
    assert key_file.stat().st_mode & 0o777 == 0o600
    children = session.children()
    assert set(children) == {s.name for s in SERVICES}
    postmaster = postmaster_pid(data_dir)
    assert postmaster is not None and not exited(postmaster)

    session.proc.send_signal(signal.SIGINT)
    assert session.finish() == 0, session.output()
    assert session.lines[-1] == "stopped."
    _gone, alive = psutil.wait_procs(list(children.values()), timeout=5)
    assert not alive
    assert postmaster_pid(data_dir) is None and exited(postmaster)
    for spec in SERVICES:
        log = data_dir / "logs" / f"{spec.name}.log"
        assert log.stat().st_size > 0, log
    # every Python service ran on uvloop (the default), through all of the above
    loops = {
        spec.name: [
            entry.get("event_loop")
            for line in (data_dir / "logs" / f"{spec.name}.log").read_text().splitlines()
            if line.startswith("{") and (entry := json.loads(line)).get("msg") == "listening"
        ]
        for spec in SERVICES
        if spec.name != "edge"
    }
    assert loops == {name: ["uvloop"] for name in loops}, loops


def test_a_second_run_reuses_the_key_restarts_what_dies_and_leaves_nothing_when_killed(
    session: RunSession, data_dir: Path
):
    recorded = (data_dir / "demo-api-key").read_text().strip()
    api_key = session.wait_for(r"export TANDEM_API_KEY=(tdm_\S+)").group(1)
    gateway = session.wait_for(r"export TANDEM_GATEWAY=(\S+)").group(1)
    session.wait_for(r"Ctrl-C stops every service")
    output = session.output()
    assert api_key == recorded
    assert "(reused;" in output
    assert re.search(r"mTLS\s+reused\s", output), output
    assert re.search(r"demo\s+140 documents already loaded", output), output

    # A crashed service is said on the console and restarted with backoff.
    children = session.children()
    children["router"].kill()
    session.wait_for(r"router\s+exited with status -9; restarting in 1 s", timeout_s=30)
    session.wait_for(r"router\s+restarted \(pid \d+\)", timeout_s=30)
    wait_serving(
        f"127.0.0.1:{session.env['ROUTER_PORT']}",
        60,
        tls=load_credentials(data_dir / "tls", "supervisor"),
        peer="router",
    )
    assert "Route: sql" in cli(session.env, 'tandem ask "How many companies are there?"',
                               api_key, gateway)  # fmt: skip

    # A killed Postgres is started again and search answers within 10 s.
    postmaster = postmaster_pid(data_dir)
    assert postmaster is not None
    psutil.Process(postmaster).kill()
    killed = time.monotonic()
    answered = _search_until_answered(gateway, api_key, deadline_s=10.0)
    assert answered - killed <= 10.0, answered - killed
    session.wait_for(r"postgres\s+died; starting it again", timeout_s=5)

    # Killed outright, the supervisor leaves nothing running.
    children = session.children()
    assert set(children) == {s.name for s in SERVICES}
    postmaster = postmaster_pid(data_dir)
    session.proc.kill()
    session.proc.wait(timeout=10)
    _gone, alive = psutil.wait_procs(list(children.values()), timeout=10)
    assert not alive, [p.cmdline() for p in alive]
    deadline = time.monotonic() + 10
    while postmaster is not None and not exited(postmaster) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert postmaster is None or exited(postmaster)


def _search_until_answered(gateway: str, api_key: str, deadline_s: float) -> float:
    """When a search first answered from the store again (not degraded, with hits)."""
    metadata = (("authorization", f"Bearer {api_key}"),)
    end = time.monotonic() + deadline_s
    with grpc.insecure_channel(gateway) as channel:
        stub = gpb_grpc.GatewayServiceStub(channel)
        while time.monotonic() < end:
            try:
                reply = stub.Search(
                    gpb.GatewayServiceSearchRequest(query="security review"),
                    metadata=metadata,
                    timeout=max(0.5, end - time.monotonic()),
                )
                if not reply.degraded and reply.hits:
                    return time.monotonic()
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise AssertionError(f"search did not answer within {deadline_s} s of the kill")
