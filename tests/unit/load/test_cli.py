"""``tandem load`` and ``tandem bench report`` through their parsers and handlers."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from services.cli import _load
from services.cli._main import Commands
from services.load import report
from services.load.report import (
    LoadPoint,
    ReportSettings,
    render_summary,
    write_charts,
)
from tests.unit.load.conftest import PlannedServer

StartServer = Callable[..., Awaitable[PlannedServer]]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tandem")
    top = parser.add_subparsers(dest="command", required=True)
    bench = top.add_parser("bench")
    evals = top.add_parser("eval")
    _load.register(
        Commands(
            top=top,
            bench=bench.add_subparsers(dest="target", required=True),
            eval=evals.add_subparsers(dest="target", required=True),
        )
    )
    return parser


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    code: int = args.handler(args)
    return code


async def test_load_writes_a_ghz_json_report(planned_server: StartServer, tmp_path: Path) -> None:
    server = await planned_server(fail_every=5)
    out = tmp_path / "report.json"
    argv = [
        "load", server.address, "--insecure", "--call", "tandem.v1.EmbeddingService.Embed",
        "-d", '{"texts": ["hello"]}', "-c", "2", "-n", "10", "-t", "5s", "-O", "json",
        "-o", str(out),
    ]  # fmt: skip

    assert await asyncio.to_thread(_run, argv) == 0
    report = json.loads(out.read_text())
    assert report["count"] == 10
    assert report["statusCodeDistribution"] == {"OK": 8, "Internal": 2}
    assert report["options"]["concurrency"] == 2
    assert server.texts == ["hello"] * 10


async def test_sigint_stops_the_load_and_still_writes_the_report(
    planned_server: StartServer, tmp_path: Path
) -> None:
    """As ghz does on Ctrl-C: no new calls, calls in flight end, the report is written."""
    server = await planned_server()
    out = tmp_path / "report.json"
    driver = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from services.cli import main; sys.exit(main())",
        "load", server.address, "--insecure", "--call",
        "tandem.v1.EmbeddingService.GetModelInfo", "-c", "2", "--rps", "50", "-z", "60s",
        "-O", "json", "-o", str(out),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        for _ in range(200):  # the driver has started calling
            if server.calls > 5:
                break
            await asyncio.sleep(0.05)
        driver.send_signal(signal.SIGINT)
        _, stderr = await asyncio.wait_for(driver.communicate(), 20)
    finally:
        if driver.returncode is None:
            driver.kill()
    assert driver.returncode == 0, stderr
    report = json.loads(out.read_text())
    assert report["endReason"] == "cancel"
    assert 0 < report["count"] < 50 * 60
    assert report["statusCodeDistribution"] == {"OK": report["count"]}


async def test_flags_override_a_ghz_config(planned_server: StartServer, tmp_path: Path) -> None:
    server = await planned_server()
    config = tmp_path / "ghz.json"
    config.write_text(
        json.dumps(
            {"call": "tandem.v1.EmbeddingService.GetModelInfo", "host": "127.0.0.1:9",
             "insecure": True, "total": 50, "concurrency": 5}
        )
    )  # fmt: skip
    out = tmp_path / "r.json"
    argv = [
        "load",
        server.address,
        "--config",
        str(config),
        "-n",
        "6",
        "-O",
        "json",
        "-o",
        str(out),
    ]

    assert await asyncio.to_thread(_run, argv) == 0
    assert json.loads(out.read_text())["count"] == 6


def test_load_without_a_call_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["load", "127.0.0.1:1", "--insecure"]) == 1
    assert "--call" in capsys.readouterr().err


def test_report_skips_gateway_load_when_no_gateway_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TANDEM_API_KEY", "tdm_unused")
    argv = ["bench", "report", "--out", str(tmp_path), "--skip-benches", "--gateway", "127.0.0.1:9"]

    assert _run(argv) == 0
    summary = (tmp_path / "SUMMARY.md").read_text()
    assert "**Skipped:** no gateway at 127.0.0.1:9" in summary
    assert "| cpu model |" in summary
    assert json.loads((tmp_path / "machine.json").read_text())["logical_cores"] >= 1
    assert not (tmp_path / "gateway-load.json").exists()


def test_report_without_a_key_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TANDEM_API_KEY", raising=False)
    assert _run(["bench", "report", "--out", str(tmp_path), "--skip-benches"]) == 0
    assert "no API key: set TANDEM_API_KEY" in (tmp_path / "SUMMARY.md").read_text()


def _points() -> list[LoadPoint]:
    return [
        LoadPoint(scenario, c, 100 * c, rps, 5.0 * c, 8.0 * c, 10.0 * c, 6.0 * c, 0)
        for scenario, rps in (("search", 220.0), ("ask_retrieve", 90.0))
        for c in (1, 8, 16, 32)
    ]


def test_summary_table_and_target_verdicts() -> None:
    summary = render_summary(
        machine={"cpu_model": "test cpu"},
        benches=[],
        points=_points(),
        gateway_note=None,
        charts=[Path("latency_vs_concurrency.png")],
        settings=ReportSettings(duration_s=60.0),
    )

    assert "| search | 16 | 1600 | 220.0 | 80.0 | 128.0 | 160.0 | 0 | 0 |" in summary
    # Search at c=16: 220 req/s but p99 160 ms > 150 ms; Ask: 90 req/s < 100.
    assert summary.count("NOT met") == 2
    assert "![latency_vs_concurrency](latency_vs_concurrency.png)" in summary


def test_charts_are_written_as_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    paths = write_charts(_points(), tmp_path)

    assert [p.name for p in paths] == [
        "latency_vs_concurrency.png",
        "throughput_vs_concurrency.png",
    ]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_points_at_the_quota_when_it_refused_calls() -> None:
    points = _points()
    points[0].statuses = {"OK": 10, "ResourceExhausted": 5}
    summary = render_summary(
        machine={},
        benches=[],
        points=points,
        gateway_note=None,
        charts=[],
        settings=ReportSettings(),
    )
    assert "GATEWAY_RATE_PER_S" in summary


def test_report_runs_every_registered_bench_quick_with_its_json_beside_the_summary(
    tmp_path: Path,
) -> None:
    commands = dict(_load.bench_commands(tmp_path))

    assert "report" not in commands
    assert commands["embed"] == ["bench", "embed", "--out", str(tmp_path / "embed.json")]
    assert commands["retrieval"] == [
        "bench", "retrieval", "--quick", "--out", str(tmp_path / "retrieval.json"),
    ]  # fmt: skip


def test_benches_run_as_child_processes_and_their_output_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = report.run_benches([("help", ["bench", "--help"]), ("bad", ["nope"])])

    assert [(r.name, r.returncode) for r in runs] == [("help", 0), ("bad", 2)]
    assert "usage: tandem bench" in runs[0].output
    assert "invalid choice" in runs[1].output
