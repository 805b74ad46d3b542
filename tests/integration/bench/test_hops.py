"""``tandem bench hops``: a real chain of bare grpc.aio processes on loopback, driven and
measured from /proc."""

from __future__ import annotations

import json

import pytest

from services.bench.hops import HopsSettings, main, render

pytestmark = pytest.mark.integration


def test_a_chain_of_bare_hops_reports_each_process_cpu(tmp_path):
    out = tmp_path / "hops.json"
    result = main(HopsSettings(out, hops=2, concurrency=4, duration_s=1.0, reply_bytes=1000))
    by_hop = result["cpu_ms_per_request_by_hop"]
    assert result["requests"] > 100 and result["rps"] > 100
    # every process of the chain worked for every request: none of them is idle
    assert len(by_hop) == 2 and all(cpu > 0 for cpu in by_hop)
    assert result["cpu_ms_per_request"] == pytest.approx(sum(by_hop), abs=0.002)
    assert json.loads(out.read_text()) == result
    assert "hop 2 (last)" in render(result)


def test_a_paced_chain_runs_at_the_rate_asked(tmp_path):
    # a hop's CPU per request depends on the rate, so the floor is compared at the rate
    # the stack reached: the pacing must hold it
    out = tmp_path / "hops.json"
    result = main(HopsSettings(out, hops=1, concurrency=8, duration_s=1.5, rate=200.0))
    assert result["rate"] == 200.0
    assert 180 <= result["rps"] <= 205
    assert "paced at 200/s" in render(result)


def test_a_chain_needs_a_hop(tmp_path):
    with pytest.raises(ValueError, match="at least 1"):
        main(HopsSettings(tmp_path / "hops.json", hops=0))
