"""The cost benchmark's /proc accounting: which processes belong to the stack and how
their CPU deltas add up, over a fake /proc."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from services.bench._proc import (
    LinuxProc,
    ProcStat,
    StackProcesses,
    cpu_delta,
    parse_stat,
    postmaster_pid,
    role_of,
)
from services.bench.cost import Stack, settle

SUPERVISOR, POSTMASTER = 100, 200


class FakeProc:
    """pid -> (ppid, comm, cmdline, ticks)."""

    def __init__(self, table: dict[int, tuple[int, str, str, int]]) -> None:
        self.table = table

    def pids(self) -> Iterable[int]:
        return list(self.table)

    def stat(self, pid: int) -> ProcStat | None:
        row = self.table.get(pid)
        return None if row is None else ProcStat(pid, row[0], row[1], row[3])

    def cmdline(self, pid: int) -> str:
        return self.table[pid][2]


def _stack(ticks: int = 0) -> dict[int, tuple[int, str, str, int]]:
    py = "/work/.venv/bin/python"
    return {
        1: (0, "init", "/sbin/init", 5),
        SUPERVISOR: (1, "tandem", f"{py} -c import sys run", 1 + ticks),
        101: (SUPERVISOR, "python", f"{py} -m gateway", 10 + ticks),
        102: (SUPERVISOR, "python", f"{py} -m services.router", 20 + ticks),
        103: (SUPERVISOR, "python", f"{py} -m services.retrieval", 30 + ticks),
        104: (SUPERVISOR, "python", f"{py} -m gateway.edge", 1),
        105: (104, "nginx", "nginx: master process /venv/bin/nginx -p x", 2),
        106: (105, "nginx", "nginx: worker process", 3 + ticks),
        # The embedded postmaster is daemonised: its parent is init, not the supervisor.
        POSTMASTER: (1, "postgres", "/venv/pginstall/bin/postgres -D /data/pg", 7),
        201: (POSTMASTER, "postgres", "postgres: app postgres [local] idle", 40 + ticks),
        202: (POSTMASTER, "postgres", "postgres: app scratch_db [local] idle", 50 + ticks),
        203: (POSTMASTER, "postgres", "postgres: walwriter ", 4 + ticks),
        204: (POSTMASTER, "postgres", "postgres: app tandem_warehouse 127.0.0.1(5012) idle", 8),
        300: (1, "python", f"{py} -m services.router", 999),  # another engineer's router
    }


def test_members_are_the_trees_under_the_supervisor_and_the_postmaster():
    members = StackProcesses((SUPERVISOR, POSTMASTER)).members(FakeProc(_stack()))
    assert set(members) == {100, 101, 102, 103, 104, 105, 106, 200, 201, 202, 203, 204}
    roles = {pid: role for pid, (role, _) in members.items()}
    assert roles[101] == "gateway" and roles[102] == "router" and roles[103] == "retrieval"
    assert roles[104] == roles[105] == roles[106] == "edge"
    assert {roles[p] for p in (200, 201, 202, 203, 204)} == {"postgres"}
    assert roles[SUPERVISOR] == "other"


def test_a_shared_postmaster_counts_only_the_stacks_databases_and_its_own_work():
    stack = StackProcesses((SUPERVISOR, POSTMASTER), frozenset({"postgres", "tandem_warehouse"}))
    members = stack.members(FakeProc(_stack()))
    assert 202 not in members  # a backend of someone else's database
    assert {200, 201, 203, 204} <= set(members)  # postmaster, ours, walwriter


def test_cpu_delta_sums_each_role_over_the_window():
    source = FakeProc(_stack())
    stack = StackProcesses((SUPERVISOR, POSTMASTER))
    before = stack.snapshot(source)
    source.table = _stack(ticks=10)
    source.table[205] = (POSTMASTER, "postgres", "postgres: app postgres [local] idle", 30)
    after = stack.snapshot(source)
    spent = cpu_delta(before, after, ticks_per_s=100)
    assert spent["gateway"] == pytest.approx(0.10)
    assert spent["router"] == pytest.approx(0.10)
    assert spent["edge"] == pytest.approx(0.10)  # the worker; master and launcher idle
    # 201, 202, 203 ran 10 ticks each; 205 started inside the window: all of its 30 count.
    assert spent["postgres"] == pytest.approx(0.60)
    assert spent["other"] == pytest.approx(0.10)


def test_a_reused_pid_counts_from_zero():
    before = {7: ("router", 500)}
    after = {7: ("router", 20)}
    assert cpu_delta(before, after, ticks_per_s=100) == {"router": pytest.approx(0.2)}


def test_parse_stat_reads_a_command_name_with_spaces_and_parentheses():
    fields = " ".join(["S", "42"] + ["0"] * 9 + ["300", "45"] + ["0"] * 30)
    stat = parse_stat(f"4242 (tandem (run) x) {fields}")
    assert stat == ProcStat(4242, 42, "tandem (run) x", 345)


def test_the_real_proc_reads_this_process():
    stat = LinuxProc().stat(__import__("os").getpid())
    assert stat is not None and stat.ticks >= 0
    assert role_of(ProcStat(1, 0, "postgres", 0), "postgres: checkpointer") == "postgres"


def test_postmaster_pid_is_the_first_line_of_postmaster_pid(tmp_path: Path):
    (tmp_path / "postmaster.pid").write_text("12345\n/data/pg\n1700000000\n")
    assert postmaster_pid(tmp_path) == 12345
    assert postmaster_pid(tmp_path / "missing") is None


def _settling(busy_windows: int, ticks_per_window: int) -> tuple[FakeProc, list[float], Any]:
    """A stack whose processes work ``ticks_per_window`` ticks in each of its first
    ``busy_windows`` windows, then 1 tick (idle), and the fake sleep that moves time."""
    source = FakeProc(_stack())
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        work = ticks_per_window if len(slept) <= busy_windows else 1
        source.table[101] = (*source.table[101][:3], source.table[101][3] + work)

    return source, slept, sleep


async def test_the_rounds_wait_until_a_started_stack_is_idle():
    # 3 windows of post-start work (a vacuum after the demo ingest), then quiet
    source, slept, sleep = _settling(busy_windows=3, ticks_per_window=50)
    stack = Stack("after", "x", "k", StackProcesses((SUPERVISOR, POSTMASTER)))
    waited = await settle([stack], source, 100, share=0.05, window_s=2.0, sleep=sleep)
    assert waited == 8.0 and slept == [2.0] * 4


async def test_a_stack_that_never_goes_idle_is_measured_after_the_limit():
    source, slept, sleep = _settling(busy_windows=1000, ticks_per_window=50)
    stack = Stack("after", "x", "k", StackProcesses((SUPERVISOR, POSTMASTER)))
    waited = await settle([stack], source, 100, window_s=2.0, limit_s=10.0, sleep=sleep)
    assert waited is None and len(slept) == 5
