"""The load driver against a real grpc.aio server with planned delays and failures."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

import pytest

from services.load import LoadOptions, Report, TargetUnreachable, run_load
from tests.unit.load.conftest import PlannedServer

StartServer = Callable[..., Awaitable[PlannedServer]]
INFO = "tandem.v1.EmbeddingService.GetModelInfo"


def _options(server: PlannedServer, **overrides: object) -> LoadOptions:
    base: dict[str, object] = {
        "call": INFO,
        "host": server.address,
        "insecure": True,
        "concurrency": 4,
        "total": 20,
    }
    base.update(overrides)
    return LoadOptions(**base)  # type: ignore[arg-type]


def _nearest_rank(ordered: list[float], pct: int) -> float:
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _most_in_flight(report: Report) -> int:
    """The most calls whose measured intervals overlap at any instant."""
    edges = sorted(
        [(d.start_s, 1) for d in report.details]
        + [(d.start_s + d.latency_s, -1) for d in report.details],
        key=lambda edge: (edge[0], edge[1]),
    )
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def _covers_the_server(report: Report, server: PlannedServer) -> bool:
    """Each call is timed across the server's own work on it: the measured latencies,
    sorted, are each at least the server's time on the call of the same rank."""
    measured = sorted(d.latency_s for d in report.details)
    held = sorted(server.held_s)
    return len(measured) == len(held) and all(m >= h for m, h in zip(measured, held, strict=True))


async def test_percentiles_follow_a_two_speed_server(planned_server: StartServer) -> None:
    # Every even call takes 10 ms and every odd call 50 ms.
    server = await planned_server(delay_for=lambda n: 0.010 if n % 2 == 0 else 0.050)
    report = await run_load(_options(server, concurrency=10, total=100))

    assert report.count == 100
    assert report.status_code_distribution == {"OK": 100}
    assert report.error_distribution == {}
    # Every latency spans the server's work on its call, so the upper half of the
    # distribution holds the 50 ms calls and no percentile is below the fast calls.
    assert _covers_the_server(report, server)
    assert all(report.percentile(pct) >= 0.050 for pct in (75, 90, 95, 99))
    assert report.fastest_s >= 0.010
    # ... and each is only its own call: never more than 10 in flight at once.
    assert _most_in_flight(report) <= 10
    # The summary is the measured calls' (nearest rank, min, max, mean, per second).
    ordered = sorted(d.latency_s for d in report.details)
    for pct in (10, 25, 50, 75, 90, 95, 99):
        assert report.percentile(pct) == _nearest_rank(ordered, pct), pct
    assert (report.fastest_s, report.slowest_s) == (ordered[0], ordered[-1])
    assert report.average_s == pytest.approx(sum(ordered) / 100)
    # 10 workers one call at a time: the run lasts at least a tenth of all call time.
    assert report.total_s >= max(d.start_s + d.latency_s for d in report.details)
    assert report.total_s >= sum(ordered) / 10
    assert report.rps == pytest.approx(report.count / report.total_s)
    assert sum(b.count for b in report.histogram) == 100


async def test_every_nth_failure_shows_in_status_and_error_distributions(
    planned_server: StartServer,
) -> None:
    server = await planned_server(fail_every=4)
    report = await run_load(_options(server, concurrency=4, total=40))

    assert report.count == 40
    assert report.status_code_distribution == {"OK": 30, "Internal": 10}
    assert report.error_distribution == {"rpc error: code = Internal desc = planned failure": 10}
    # Latency percentiles cover the OK calls only (ghz's rule).
    assert sum(b.count for b in report.histogram) == 30


async def test_total_sends_exactly_n_requests(planned_server: StartServer) -> None:
    server = await planned_server()
    report = await run_load(_options(server, concurrency=7, total=53))

    assert report.count == 53
    assert server.calls == 53


async def test_duration_stops_sending_when_it_ends(planned_server: StartServer) -> None:
    server = await planned_server(delay_for=lambda _n: 0.010)
    report = await run_load(_options(server, concurrency=4, total=1, duration_s=0.6))

    assert report.end_reason == "timeout"
    # Nothing is sent after the end; at most one call per worker was still in flight.
    assert all(d.start_s < 0.6 for d in report.details)
    assert sum(1 for d in report.details if d.start_s + d.latency_s >= 0.6) <= 4
    assert report.total_s >= 0.6
    # -n is ignored: the workers kept calling until the end.
    assert report.count > 4
    assert server.calls == report.count


async def test_rps_paces_a_fixed_number_of_requests(planned_server: StartServer) -> None:
    server = await planned_server()
    report = await run_load(_options(server, concurrency=5, total=20, rps=40))

    assert report.count == 20
    # A ticker 25 ms apart (its first tick at the run's start): the k-th send leaves no
    # earlier than its tick, however many workers wait, so no burst.
    starts = sorted(d.start_s for d in report.details)
    assert all(start >= k * 0.025 - 0.001 for k, start in enumerate(starts))
    assert report.rps <= 42.2


async def test_rps_with_duration_sends_rate_times_duration(planned_server: StartServer) -> None:
    server = await planned_server()
    report = await run_load(_options(server, concurrency=8, duration_s=1.0, rps=50))

    # At most one send per 20 ms tick inside the second (the ticks, not the 8 workers,
    # set the count); the bench and the fairness test's flood check the rate reached.
    assert all(
        d.start_s >= k * 0.020 - 0.001
        for k, d in enumerate(sorted(report.details, key=lambda d: d.start_s))
    )
    assert 1 <= report.count <= 51
    assert server.calls == report.count


async def test_timeout_is_a_deadline_per_call(planned_server: StartServer) -> None:
    # The server never answers: only the per-call deadline can end each call.
    server = await planned_server(hold=asyncio.Event())
    report = await run_load(_options(server, concurrency=2, total=4, timeout_s=0.05))

    assert report.status_code_distribution == {"DeadlineExceeded": 4}
    assert server.calls == 4  # each worker's second call got a deadline of its own
    assert all(d.latency_s >= 0.05 for d in report.details)
    assert math.isnan(report.fastest_s)
    assert report.latency_distribution == ()


async def test_metadata_and_templated_data_reach_the_server(
    planned_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOAD_TEST_KEY", "tdm_secret")
    server = await planned_server()
    await run_load(
        _options(
            server,
            call="tandem.v1.EmbeddingService/Embed",
            data={"texts": ["q-{{.RequestNumber}}"], "input_type": "INPUT_TYPE_QUERY"},
            metadata={"Authorization": "Bearer ${LOAD_TEST_KEY}"},
            concurrency=2,
            total=6,
        )
    )

    assert sorted(server.texts) == [f"q-{n}" for n in range(6)]
    assert all(md.get("authorization") == "Bearer tdm_secret" for md in server.metadata)


async def test_array_data_is_used_round_robin(planned_server: StartServer) -> None:
    server = await planned_server()
    data = [{"texts": ["a"]}, {"texts": ["b"]}, {"texts": ["c"]}]
    await run_load(_options(server, call="tandem.v1.EmbeddingService.Embed", data=data, total=9))

    assert sorted(server.texts) == ["a"] * 3 + ["b"] * 3 + ["c"] * 3


async def test_a_server_stream_is_timed_to_its_last_message(planned_server: StartServer) -> None:
    server = await planned_server(stream_messages=4)
    report = await run_load(
        _options(server, call="tandem.v1.RetrievalService.IngestDocuments", total=4)
    )

    assert report.status_code_distribution == {"OK": 4}
    # Each call's latency spans the server's work up to its last message.
    assert _covers_the_server(report, server)


async def test_an_unreachable_target_is_reported_not_counted() -> None:
    options = LoadOptions(
        call=INFO,
        host="127.0.0.1:9",
        insecure=True,
        concurrency=1,
        total=1,
        connect_timeout_s=0.3,
    )
    with pytest.raises(TargetUnreachable, match=r"127\.0\.0\.1:9"):
        await run_load(options)
