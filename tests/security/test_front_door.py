"""The front door under attack (issue 46, items 5, 6 and 10), on the stack as processes:
the edge (nginx) in front of the gateway, every service real.

- One key, many spellings: the edge limited per raw Authorization header while the
  gateway accepted `bearer`, extra spaces or a bare key, so rotating spellings of one key
  opened a bucket per spelling. The gateway now accepts one form, `Bearer <key>`, the
  edge limits on that key and refuses every other spelling itself, naming the form.
- Two authorization headers came back INTERNAL through the edge (nginx's HTTP 400); they
  are UNAUTHENTICATED, at the edge and at the gateway alike.
- The edge's access log grew without bound (58 MB in ten minutes of a flood); it is
  rotated by size, to a bounded number of files.
- Uploads were held whole in memory (eight concurrent 49 MiB uploads: a 1.5 GiB
  gateway); they are spooled, bounded per tenant and in total (RESOURCE_EXHAUSTED with
  RetryInfo past a budget), and the gateway's memory stays below what is in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypeAlias

import grpc
import psutil
import pytest

from gateway.edge import ACCESS_LOG, run_dir
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tests.faults.contract import ErrorSeen, assert_contract, decode
from tests.integration.gateway.stack import bearer
from tests.processes import ProcessStack, fresh_key, gateway_stub

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

MIB = 1024 * 1024
EDGE_BURST = 4
# The access log rotates past 16 KiB, keeping two old files; nginx writes it in pieces
# of up to its 64 KiB buffer, so each file is at most about 80 KiB.
LOG_MAX_BYTES = 16 * 1024
LOG_KEEP = 2
LOG_BOUND = (LOG_KEEP + 1) * (LOG_MAX_BYTES + 64 * 1024)
EDGE_ENV = {
    # The edge is told the quota is one call a second (its limit: burst 4) while the
    # gateway admits 10,000: every RESOURCE_EXHAUSTED for the rate is the edge's.
    "GATEWAY_RATE_PER_S": "1",
    "GATEWAY_BURST": "2",
    "EDGE_RATE_PER_S": "1",
    "EDGE_BURST": str(EDGE_BURST),
    "EDGE_ACCESS_LOG_MAX_BYTES": str(LOG_MAX_BYTES),
    "EDGE_ACCESS_LOG_KEEP": str(LOG_KEEP),
    "EDGE_ACCESS_LOG_CHECK_S": "0.1",
}
# Uploads: 8 MiB files at most; a tenant may have four in flight, the gateway seven;
# one is sent to retrieval at a time.
FILE_BYTES = 8 * MIB
TENANT_FILES, TOTAL_FILES = 4, 7
RETRY_S = 2.0
GATEWAY_ENV = {
    "GATEWAY_RATE_PER_S": "10000",
    "GATEWAY_BURST": "10000",
    "GATEWAY_MAX_UPLOAD_BYTES": str(FILE_BYTES),
    "GATEWAY_UPLOAD_MEMORY_BYTES": str(256 * 1024),
    "GATEWAY_UPLOAD_TENANT_BYTES": str(TENANT_FILES * FILE_BYTES),
    "GATEWAY_UPLOAD_TOTAL_BYTES": str(TOTAL_FILES * FILE_BYTES),
    "GATEWAY_UPLOAD_SENDING_BYTES": str(FILE_BYTES),
    "GATEWAY_UPLOAD_RETRY_S": str(RETRY_S),
}
VALIDATE = gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1")
FORM = "`authorization: Bearer <key>`"
# Spellings the gateway used to accept for one key, each a bucket of its own at the edge.
SPELLINGS = (
    "bearer {key}",
    "BEARER {key}",
    "bEaReR {key}",
    "Bearer  {key}",
    "Bearer   {key}",
    "{key}",
    "beaRER  {key}",
)

Stub: TypeAlias = "gpb_grpc.GatewayServiceAsyncStub"


@pytest.fixture(scope="module")
def front_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    stack = ProcessStack(
        tmp_path_factory.mktemp("front-door"),
        service_env={"edge": EDGE_ENV, "gateway": GATEWAY_ENV},
        grace_s=2.0,
    )
    with stack:
        yield stack


_stub = gateway_stub
_key = fresh_key


async def _outcome(call: Any) -> ErrorSeen | None:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return decode(exc)
    return None


def _internal(stack: ProcessStack) -> tuple[str, ...]:
    return (*stack.addresses.values(), *(f":{p}" for p in stack.ports.values()))


def _malformed(seen: ErrorSeen | None) -> bool:
    return (
        seen is not None
        and seen.code == grpc.StatusCode.UNAUTHENTICATED
        and [(i.reason, i.domain) for i in seen.infos] == [("AUTHORIZATION_MALFORMED", "tandem")]
        and FORM in seen.message
    )


# -- item 5: one key, one bucket -----------------------------------------------------------


async def test_rotating_spellings_of_one_key_share_one_bucket_at_the_edge(
    front_door: ProcessStack,
):
    stack = front_door
    key = await _key(stack, "spellings")
    bystander = bearer(await _key(stack, "bystander"))
    spellings = [f"Bearer {key}", *(s.format(key=key) for s in SPELLINGS)]
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        stub = _stub(edge)

        async def flood() -> list[ErrorSeen | None]:
            calls = [
                stub.ValidateSql(VALIDATE, metadata=(("authorization", s),), timeout=20)
                for _ in range(6)
                for s in spellings
            ]
            return list(await asyncio.gather(*(_outcome(c) for c in calls)))

        async def beside() -> list[ErrorSeen | None]:
            seen = []
            for _ in range(EDGE_BURST):
                seen.append(await _outcome(stub.ValidateSql(VALIDATE, metadata=bystander)))
                await asyncio.sleep(0.02)
            return seen

        flooded, served = await asyncio.gather(flood(), beside())
    # The bystander is served throughout.
    assert served == [None] * EDGE_BURST, served
    # One bucket for the key however it is spelled: its burst (nginx admits burst + 1)
    # and at most a refill or two while the flood lasted, not a burst per spelling.
    admitted = [s for s in flooded if s is None]
    assert len(admitted) <= EDGE_BURST + 3, f"{len(admitted)} of {len(flooded)} admitted"
    over = [s for s in flooded if s is not None and s.code == grpc.StatusCode.RESOURCE_EXHAUSTED]
    malformed = [s for s in flooded if _malformed(s)]
    assert len(admitted) + len(over) + len(malformed) == len(flooded), flooded
    assert len(malformed) == 6 * len(SPELLINGS)
    for seen in [*over, *malformed]:
        assert seen is not None
        assert_contract(seen, internal=_internal(stack))


async def test_every_other_spelling_is_unauthenticated_naming_the_form(front_door: ProcessStack):
    stack = front_door
    key = await _key(stack, "spelling")
    async with (
        grpc.aio.insecure_channel(stack.edge_address) as edge,
        grpc.aio.insecure_channel(stack.gateway_address) as direct,
    ):
        for spelling in (*SPELLINGS, "Bearer ", "Basic dXNlcjpwYXNz", "Token {key}"):
            metadata = (("authorization", spelling.format(key=key)),)
            through = await _outcome(_stub(edge).ValidateSql(VALIDATE, metadata=metadata))
            same = await _outcome(_stub(direct).ValidateSql(VALIDATE, metadata=metadata))
            assert _malformed(through), (spelling, through)
            assert _malformed(same), (spelling, same)
            # The edge's refusal is the gateway's own: a caller cannot tell them apart.
            assert through is not None and same is not None
            assert (through.status, through.message) == (same.status, same.message)
            assert_contract(through, internal=_internal(stack))
        # The one form is served, at both doors.
        assert await _outcome(_stub(edge).ValidateSql(VALIDATE, metadata=bearer(key))) is None
        assert await _outcome(_stub(direct).ValidateSql(VALIDATE, metadata=bearer(key))) is None


# -- item 10: two authorization headers -----------------------------------------------------


async def test_two_authorization_headers_are_unauthenticated(front_door: ProcessStack):
    stack = front_door
    key = await _key(stack, "twice")
    forged = "tdm_" + "a" * 16 + "_" + "B" * 43
    async with (
        grpc.aio.insecure_channel(stack.edge_address) as edge,
        grpc.aio.insecure_channel(stack.gateway_address) as direct,
    ):
        for second in (key, forged):
            metadata = (*bearer(key), *bearer(second))
            for channel in (edge, direct):
                seen = await _outcome(_stub(channel).ValidateSql(VALIDATE, metadata=metadata))
                assert _malformed(seen), seen
                assert seen is not None and "more than one authorization header" in seen.message
                assert_contract(seen, internal=_internal(stack))


# -- item 10: the access log ----------------------------------------------------------------


def _access_logs(stack: ProcessStack) -> list[Path]:
    return sorted(run_dir(stack.data_dir, stack.ports["edge"]).glob(f"{ACCESS_LOG}*"))


async def test_the_edge_access_log_is_rotated_and_bounded(front_door: ProcessStack):
    stack = front_door
    key = bearer(await _key(stack, "log-flood"))
    calls = 5000
    async with grpc.aio.insecure_channel(stack.edge_address) as edge:
        stub = _stub(edge)
        # Past its burst the key is refused by nginx itself: the cheapest lines to make.
        for start in range(0, calls, 250):
            batch = [stub.ValidateSql(VALIDATE, metadata=key) for _ in range(250)]
            await asyncio.gather(*(_outcome(c) for c in batch))
            assert start < calls
    await asyncio.sleep(2.5)  # nginx flushes every 2 s; the launcher checks every 0.1 s
    files = _access_logs(stack)
    names = [p.name for p in files]
    sizes = {p.name: p.stat().st_size for p in files}
    # More was written than the bound (each line is over 150 bytes) ...
    assert calls * 150 > 2 * LOG_BOUND
    # ... and what stays is bounded: the log and at most LOG_KEEP old ones.
    assert f"{ACCESS_LOG}.1" in names, sizes
    assert set(names) <= {ACCESS_LOG, *(f"{ACCESS_LOG}.{n}" for n in range(1, LOG_KEEP + 1))}
    assert sum(sizes.values()) <= LOG_BOUND, sizes


# -- item 6: uploads ------------------------------------------------------------------------


def _gif(size: int) -> bytes:
    """A file retrieval refuses at once (a GIF, an unsupported type: PNG is read by OCR
    now): the upload's cost is the gateway's, not extraction's."""
    return (b"GIF89a" + bytes(size))[:size]


async def _pieces(
    name: str, data: bytes, sent: asyncio.Event
) -> AsyncIterator[gpb.GatewayServiceUploadDocumentRequest]:
    yield gpb.GatewayServiceUploadDocumentRequest(
        header=gpb.GatewayServiceUploadHeader(
            document=rpb.DocumentInput(document_id=name, file_name=f"{name}.gif")
        )
    )
    for i in range(0, len(data), MIB):
        yield gpb.GatewayServiceUploadDocumentRequest(chunk=data[i : i + MIB])
    sent.set()


class _Upload:
    """One UploadDocument call running in the background."""

    def __init__(self, stub: Stub, key: str, name: str, data: bytes) -> None:
        self.sent = asyncio.Event()
        call = stub.UploadDocument(_pieces(name, data, self.sent), metadata=bearer(key))
        self.task = asyncio.ensure_future(self._run(call))

    @staticmethod
    async def _run(call: Any) -> ErrorSeen | list[Any]:
        try:
            return [event async for event in call]
        except grpc.aio.AioRpcError as exc:
            return decode(exc)


class _PeakRss:
    """The largest resident size of a process, sampled every 20 ms while running."""

    def __init__(self, pid: int) -> None:
        self._process = psutil.Process(pid)
        self.start = self.peak = self._process.memory_info().rss
        self._task = asyncio.ensure_future(self._sample())

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, self._process.memory_info().rss)
            await asyncio.sleep(0.02)

    async def stop(self) -> int:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        return self.peak - self.start


async def _settled(uploads: list[_Upload], timeout_s: float) -> None:
    """Every upload has sent its last piece or already ended."""
    deadline = time.monotonic() + timeout_s
    while not all(u.sent.is_set() or u.task.done() for u in uploads):
        assert time.monotonic() < deadline, "the uploads did not get through"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the last pieces are counted, the refusals sent


def _refused(result: ErrorSeen | list[Any], scope: str) -> bool:
    return (
        isinstance(result, ErrorSeen)
        and result.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        and [(i.reason, dict(i.metadata)) for i in result.infos]
        == [("UPLOAD_BUDGET_EXHAUSTED", {"scope": scope, "limit": str(
            (TENANT_FILES if scope == "tenant" else TOTAL_FILES) * FILE_BYTES)})]
        and [r.retry_delay.ToMilliseconds() for r in result.retries] == [RETRY_S * 1000]
    )  # fmt: skip


def _ended(result: ErrorSeen | list[Any]) -> bool:
    return isinstance(result, list) and result[-1].WhichOneof("event") == "summary"


async def test_uploads_in_flight_are_bounded_per_tenant_and_in_total_and_not_held_in_memory(
    front_door: ProcessStack,
):
    stack = front_door
    first, second = await _key(stack, "uploader"), await _key(stack, "neighbour")
    gateway_pid = stack.pid("gateway")
    assert gateway_pid is not None
    data = _gif(FILE_BYTES)
    async with grpc.aio.insecure_channel(stack.gateway_address) as channel:
        stub = _stub(channel)
        # Warm the upload path (channels, the first spool) before measuring.
        warm = _Upload(stub, first, "warm", _gif(MIB))
        assert _ended(await asyncio.wait_for(warm.task, 60))
        # Retrieval held: every accepted upload stays in flight.
        await asyncio.to_thread(stack.pause, "retrieval")
        rss = _PeakRss(gateway_pid)
        try:
            mine = [_Upload(stub, first, f"mine-{i}", data) for i in range(TENANT_FILES + 1)]
            await _settled(mine, 60)
            theirs = [_Upload(stub, second, f"theirs-{i}", data) for i in range(TENANT_FILES)]
            await _settled(theirs, 60)
            grown = await rss.stop()
            refused = [u.task.result() for u in (*mine, *theirs) if u.task.done()]
        finally:
            await asyncio.to_thread(stack.resume, "retrieval")
        results = await asyncio.wait_for(asyncio.gather(*(u.task for u in (*mine, *theirs))), 120)
        # Past its own budget a tenant is refused, told when to come back ...
        mine_refused = [r for r in results[: len(mine)] if _refused(r, "tenant")]
        assert len(mine_refused) == 1, results[: len(mine)]
        # ... and its neighbour still gets the rest of the total, then is refused too.
        theirs_results = results[len(mine) :]
        theirs_refused = [r for r in theirs_results if _refused(r, "gateway")]
        assert len(theirs_refused) == TENANT_FILES - (TOTAL_FILES - TENANT_FILES)
        assert refused == [*mine_refused, *theirs_refused]
        # Every accepted upload was answered once retrieval came back.
        assert sum(_ended(r) for r in results) == TOTAL_FILES, results
        for result in results:
            if isinstance(result, ErrorSeen):
                assert_contract(result, internal=_internal(stack))
        # Seven 8 MiB files in flight at once cost the gateway less than the files (held
        # whole, they cost it several times their size).
        assert grown < TOTAL_FILES * FILE_BYTES, f"the gateway grew {grown / MIB:.0f} MiB"
        # The budget is given back when the calls end: the tenant uploads again.
        again = _Upload(stub, first, "again", data)
        assert _ended(await asyncio.wait_for(again.task, 60))
