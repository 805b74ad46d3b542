"""The load driver against a real grpc.aio server with planned delays and failures."""

from __future__ import annotations

import itertools
import math
from collections.abc import Awaitable, Callable

import pytest

from services.load import LoadOptions, TargetUnreachable, run_load
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


async def test_percentiles_follow_a_two_speed_server(planned_server: StartServer) -> None:
    # Every even call takes 10 ms and every odd call 50 ms: the lower half of the
    # distribution sits near 10 ms and the upper half near 50 ms.
    server = await planned_server(delay_for=lambda n: 0.010 if n % 2 == 0 else 0.050)
    report = await run_load(_options(server, concurrency=10, total=100))

    assert report.count == 100
    assert report.status_code_distribution == {"OK": 100}
    assert report.error_distribution == {}
    for pct in (10, 25, 50):
        assert 0.010 <= report.percentile(pct) < 0.035, pct
    for pct in (75, 90, 95, 99):
        assert 0.050 <= report.percentile(pct) < 0.090, pct
    assert 0.010 <= report.fastest_s < 0.035
    assert 0.050 <= report.slowest_s < 0.150
    assert 0.030 <= report.average_s < 0.060
    # 10 workers, 10 calls each, 30 ms a call on average: about 0.3 s in all.
    assert 0.28 <= report.total_s < 0.9
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
    assert all(d.start_s < 0.6 for d in report.details)
    # 4 workers at ~10 ms a call for 0.6 s: far more than -n (ignored), at most 240.
    assert 40 <= report.count <= 240
    assert 0.6 <= report.total_s < 0.9
    assert server.calls == report.count


async def test_rps_paces_a_fixed_number_of_requests(planned_server: StartServer) -> None:
    server = await planned_server()
    report = await run_load(_options(server, concurrency=5, total=20, rps=40))

    assert report.count == 20
    starts = sorted(d.start_s for d in report.details)
    # 20 sends 25 ms apart: the last leaves about 0.475 s after the first.
    assert 0.45 <= starts[-1] - starts[0] < 0.65
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) > 0.015
    assert report.rps <= 42


async def test_rps_with_duration_sends_rate_times_duration(planned_server: StartServer) -> None:
    server = await planned_server()
    report = await run_load(_options(server, concurrency=8, duration_s=1.0, rps=50))

    assert 45 <= report.count <= 51


async def test_timeout_is_a_deadline_per_call(planned_server: StartServer) -> None:
    server = await planned_server(delay_for=lambda _n: 0.5)
    report = await run_load(_options(server, concurrency=2, total=4, timeout_s=0.05))

    assert report.status_code_distribution == {"DeadlineExceeded": 4}
    assert all(0.04 <= d.latency_s < 0.3 for d in report.details)
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
    # Four messages 5 ms apart: no call can finish in under 20 ms.
    assert report.fastest_s >= 0.02


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
