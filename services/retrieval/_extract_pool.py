"""Extraction in worker processes, shared fairly between tenants.

Why processes: a thread cannot be stopped, so a file that outlived its deadline kept a
thread (and a core) busy after the caller had its answer, and six slow uploads filled
the service's six-thread pool so that everyone's ingest waited. A worker process is
killed at the deadline (SIGKILL, before the document's error is reported), and the
kernel holds it to the memory and CPU limits it set on itself (``_extract_worker``).

Why a pool: starting a worker costs about a second of imports, far more than reading a
small file, so ``workers`` processes are kept warm and reused; one that is killed or ran
out of memory is replaced in the background.

Why per tenant: each tenant may use at most ``per_tenant`` of the workers at once, and a
freed worker goes to the waiting tenants in turn (round robin), so a tenant's heavy
uploads queue behind its own work, and another tenant's file gets the next free worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import struct
import sys
import weakref
from collections import Counter, OrderedDict, deque
from pathlib import Path

from services.retrieval._extract_worker import (
    READY,
    decode_reply,
    frame,
    request_header,
    retires,
)
from services.retrieval.extract import Extracted, ExtractLimits, Reason, Unextractable

_log = logging.getLogger("tandem.retrieval")
_LENGTH = struct.Struct(">Q")
# How long a deadline's answer waits for the killed worker to be gone (SIGKILL takes
# milliseconds; this only bounds a process stuck in the kernel).
_REAP_S = 5.0
# The directory holding the ``services`` package, so a worker imports the same code.
_CODE_ROOT = str(Path(__file__).resolve().parents[2])


class ExtractionTimeout(Exception):
    """The file was not extracted within the deadline; its worker has been killed."""


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def call(self, header: bytes, data: bytes) -> bytes:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(frame(header))
        stdin.write(frame(data))
        await stdin.drain()
        (size,) = _LENGTH.unpack(await stdout.readexactly(_LENGTH.size))
        return await stdout.readexactly(size)

    def kill(self) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()


def _kill_all(pids: set[int]) -> None:
    """Finalizer: a pool dropped without ``close`` leaves no workers behind."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


class ExtractionPool:
    """``await pool.extract(tenant, data, name, limits, timeout_s)``: the file's text from a
    worker process, within the deadline and the tenant's share of the workers."""

    def __init__(self, *, workers: int, per_tenant: int, memory_bytes: int) -> None:
        if workers < 1 or per_tenant < 1:
            raise ValueError(f"workers and per_tenant must be >= 1, got {workers}, {per_tenant}")
        self._size = workers
        self._per_tenant = min(per_tenant, workers)
        self._memory_bytes = memory_bytes
        self._idle: asyncio.Queue[_Worker | BaseException] | None = None
        self._live = 0  # processes started or starting, not yet retired
        self._in_use = 0
        self._running: Counter[str] = Counter()
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._starting: set[asyncio.Task[None]] = set()
        self._reaping: set[asyncio.Task[None]] = set()
        self._workers: set[_Worker] = set()  # usable: started, not retired
        self._retired: set[_Worker] = set()  # killed, not yet reaped
        self._pids: set[int] = set()
        self._closed = False
        self._finalizer = weakref.finalize(self, _kill_all, self._pids)

    # -- the call ------------------------------------------------------------------------

    async def extract(
        self, tenant_id: str, data: bytes, name: str, limits: ExtractLimits, timeout_s: float
    ) -> Extracted:
        """Raises ``Unextractable`` as ``extract`` does, ``ExtractionTimeout`` past
        ``timeout_s`` of extracting (the wait for a worker is not counted: the caller's
        own deadline bounds that)."""
        await self._acquire(tenant_id)
        try:
            worker = await self._worker()
            try:
                async with asyncio.timeout(timeout_s):
                    payload = await worker.call(request_header(name, limits, timeout_s), data)
            except TimeoutError:
                self._retire(worker)
                # Answer only once the worker is gone: no work on the file after the reply.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(worker.process.wait(), _REAP_S)
                raise ExtractionTimeout() from None
            except (asyncio.IncompleteReadError, ConnectionError):
                self._retire(worker)
                returncode = await worker.process.wait()
                if returncode == -signal.SIGXCPU:
                    raise ExtractionTimeout() from None
                raise Unextractable(
                    Reason.CORRUPT, f"stopped the reader (exit status {returncode})"
                ) from None
            except BaseException:  # cancelled: nobody wants the answer, so nobody works on it
                self._retire(worker)
                raise
            try:
                extracted = decode_reply(payload)
            except Unextractable:
                self._retire(worker) if retires(payload) else self._put(worker)
                raise
            except Exception as exc:  # a reply we cannot read: the worker is not trusted again
                self._retire(worker)
                raise Unextractable(Reason.CORRUPT, "could not be read (a bad reply)") from exc
            self._put(worker)
            return extracted
        finally:
            self._release(tenant_id)

    def worker_pids(self) -> list[int]:
        """The worker processes alive now (for tests and operators)."""
        return [w.process.pid for w in self._workers if w.alive]

    def start(self) -> None:
        """Start the workers now rather than at the first file (at service start)."""
        while self._live < self._size:
            self._spawn_soon()

    async def close(self) -> None:
        self._closed = True
        starting = list(self._starting)
        for task in starting:
            task.cancel()
        # A worker still starting is either killed by asyncio with its cancelled start or
        # already registered: wait for the starts to end, or a process created a moment
        # before close() outlives the pool (and its event loop) unreaped.
        await asyncio.gather(*starting, return_exceptions=True)
        every = self._workers | self._retired
        for worker in every:
            worker.kill()
        for worker in every:
            with contextlib.suppress(Exception):
                await worker.process.wait()
        for _ in range(3):  # the pipes' transports close a step after the exit is seen
            await asyncio.sleep(0)
        self._workers.clear()
        self._retired.clear()
        self._pids.clear()

    # -- workers --------------------------------------------------------------------------

    def _queue(self) -> asyncio.Queue[_Worker | BaseException]:
        if self._idle is None:
            self._idle = asyncio.Queue()
        return self._idle

    async def _worker(self) -> _Worker:
        queue = self._queue()
        while True:
            if queue.empty() and self._live < self._size:
                self.start()  # every missing worker: the next file need not wait either
            got = await queue.get()
            if isinstance(got, BaseException):
                raise got
            if got.alive:
                return got
            self._forget(got)

    def _put(self, worker: _Worker) -> None:
        self._queue().put_nowait(worker)

    def _retire(self, worker: _Worker) -> None:
        """Kill ``worker`` now; a replacement starts in the background."""
        worker.kill()
        self._forget(worker)
        if not self._closed and self._live < self._size:
            self._spawn_soon()

    def _forget(self, worker: _Worker) -> None:
        if worker in self._workers:
            self._workers.discard(worker)
            self._retired.add(worker)
            self._live -= 1
            task = asyncio.create_task(self._reap(worker))
            self._reaping.add(task)
            task.add_done_callback(self._reaping.discard)

    async def _reap(self, worker: _Worker) -> None:
        try:
            await worker.process.wait()
        finally:
            self._retired.discard(worker)
            self._pids.discard(worker.process.pid)

    def _spawn_soon(self) -> None:
        self._live += 1
        task = asyncio.create_task(self._spawn())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def _spawn(self) -> None:
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "services.retrieval._extract_main",
                str(self._memory_bytes),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                cwd=_CODE_ROOT,
            )
            worker = _Worker(process)
            self._workers.add(worker)
            self._pids.add(process.pid)
            assert process.stdout is not None
            if await process.stdout.readexactly(len(READY)) != READY:
                raise RuntimeError("the extraction worker did not start")
        except asyncio.CancelledError:
            self._live -= 1
            raise
        except Exception as exc:
            self._live -= 1
            _log.error(
                "extraction worker failed to start",
                extra={"fields": {"error.type": type(exc).__name__}},
            )
            self._queue().put_nowait(exc)
            return
        self._put(worker)

    # -- the tenants' shares --------------------------------------------------------------

    async def _acquire(self, tenant_id: str) -> None:
        if self._in_use < self._size and self._running[tenant_id] < self._per_tenant:
            self._take(tenant_id)
            return
        granted = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(tenant_id, deque()).append(granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(tenant_id)  # granted as the caller went away
            else:
                waiting = self._waiting.get(tenant_id)
                if waiting is not None and granted in waiting:
                    waiting.remove(granted)
                    if not waiting:
                        del self._waiting[tenant_id]
            raise

    def _take(self, tenant_id: str) -> None:
        self._in_use += 1
        self._running[tenant_id] += 1

    def _release(self, tenant_id: str) -> None:
        self._in_use -= 1
        self._running[tenant_id] -= 1
        if not self._running[tenant_id]:
            del self._running[tenant_id]
        self._dispatch()

    def _dispatch(self) -> None:
        """Free workers to waiting tenants in turn, skipping tenants at their share."""
        while self._in_use < self._size:
            chosen = None
            for tenant_id in list(self._waiting):
                waiting = self._waiting[tenant_id]
                while waiting and waiting[0].done():
                    waiting.popleft()  # its caller was cancelled and has not yet left
                if not waiting:
                    del self._waiting[tenant_id]
                elif self._running[tenant_id] < self._per_tenant:
                    chosen = tenant_id
                    break
            if chosen is None:
                return
            waiting = self._waiting[chosen]
            granted = waiting.popleft()
            if waiting:
                self._waiting.move_to_end(chosen)
            else:
                del self._waiting[chosen]
            self._take(chosen)
            granted.set_result(None)

    def tenant_share(self, tenant_id: str) -> tuple[int, int]:
        """(running, waiting) extractions of ``tenant_id`` (for tests and metrics)."""
        return self._running.get(tenant_id, 0), len(self._waiting.get(tenant_id, ()))
