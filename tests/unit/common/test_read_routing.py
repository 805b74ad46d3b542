"""ReadRouting's rules without a database: where a read goes given the monitor's samples
(a fake clock), the tenant's last write and the caller's ``x-tandem-lsn``. The pools are
never touched here; the integration tests (tests/integration/retrieval/
test_read_replicas.py) run the same rules against a real standby."""

from __future__ import annotations

import grpc
import pytest

from services.common import (
    LSN_HEADER,
    Database,
    InvalidArgument,
    ReadRouting,
    ReadSettings,
    SettingsError,
    lsn_from_metadata,
    parse_lsn,
    read_after,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


PRIMARY = Database("postgresql:///primary")
STANDBY = Database("postgresql:///standby")


def routing(clock: Clock, max_lag_s: float = 1.0) -> ReadRouting:
    return ReadRouting(PRIMARY, STANDBY, max_lag_s=max_lag_s, clock=clock)


def test_without_a_standby_every_read_is_the_primarys():
    reads = ReadRouting(PRIMARY)
    assert not reads.replicated
    assert reads.reader("t") is PRIMARY
    assert reads.staleness_s() is None


def test_an_unmeasured_standby_is_not_used():
    assert routing(Clock()).reader("t") is PRIMARY


def test_an_idle_caught_up_standby_stays_fresh_however_long_the_primary_is_quiet():
    clock = Clock()
    reads = routing(clock)
    for _ in range(100):  # 100 s with no write: the positions stay equal
        reads.observe(clock.now, 500, 500)
        clock.now += 1.0
    assert reads.staleness_s() == pytest.approx(1.0)
    reads.observe(clock.now, 500, 500)
    assert reads.reader("t") is STANDBY


def test_a_standby_whose_replay_stops_ages_out_at_the_bound():
    clock = Clock()
    reads = routing(clock, max_lag_s=1.0)
    reads.observe(clock.now, 500, 500)
    for step in range(1, 20):
        clock.now += 0.1
        reads.observe(clock.now, 500 + step, 500)  # the primary writes, replay stands
        if step != 10:  # exactly at the bound: either, by rounding
            assert reads.reader("t") is (STANDBY if step < 10 else PRIMARY), step
    # Replay resumes: fresh as of the latest primary position it has reached.
    clock.now += 0.1
    reads.observe(clock.now, 520, 520)
    assert reads.reader("t") is STANDBY
    # While stopped, samples older than twice the bound are not kept.
    reads.observe(clock.now, 521, 520)
    for _ in range(1000):
        clock.now += 0.1
        reads.observe(clock.now, 600, 520)
    assert len(reads._samples) <= 25


def test_a_read_after_a_write_waits_for_no_standby_that_lacks_it():
    clock = Clock()
    reads = routing(clock)
    reads.observe(clock.now, 500, 500)
    reads._written.note("t", 600)  # what mark_written records after a commit
    assert reads.reader("t") is PRIMARY
    assert reads.reader("other") is STANDBY
    token = read_after.set(700)  # a caller's own write, done through another replica
    try:
        assert reads.reader("other") is PRIMARY
    finally:
        read_after.reset(token)
    reads.observe(clock.now, 700, 700)
    assert reads.reader("t") is STANDBY
    assert reads.reads == {"primary": 2, "standby": 2}


def test_positions_parse_from_both_forms_and_refuse_anything_else():
    assert parse_lsn("0/3018AA8") == 0x3018AA8
    assert parse_lsn("1/0") == 1 << 32
    assert parse_lsn("50440872") == 50440872
    assert lsn_from_metadata([(LSN_HEADER, "5"), ("other", "9"), (LSN_HEADER, "7")]) == 7
    assert lsn_from_metadata(None) == 0
    for bad in ("", "x", "-1", "1/2/3", str(2**64)):
        with pytest.raises(InvalidArgument) as err:
            parse_lsn(bad)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert err.value.violations[0].field == LSN_HEADER


def test_settings_read_the_url_and_the_bound():
    assert ReadSettings.from_env({}) == ReadSettings(url=None, max_lag_s=1.0)
    settings = ReadSettings.from_env(
        {"DATABASE_READ_URL": "postgresql://b/x", "DB_READ_MAX_LAG_S": "0.5"}
    )
    assert settings == ReadSettings(url="postgresql://b/x", max_lag_s=0.5)
    with pytest.raises(SettingsError, match="DB_READ_MAX_LAG_S"):
        ReadSettings.from_env({"DB_READ_MAX_LAG_S": "0"})


def test_under_load_reads_split_between_the_nodes():
    clock = Clock()
    reads = routing(clock)
    reads.observe(clock.now, 500, 500)
    with reads.reading("t") as first:
        assert first is STANDBY
        with reads.reading("t") as second:
            assert second is PRIMARY  # the standby is busier
            with reads.reading("t") as third:
                assert third is STANDBY  # a tie
    assert reads.reader("t") is STANDBY  # all finished: one at a time, the standby


def test_a_write_whose_position_is_lost_keeps_its_tenant_on_the_primary_until_sampled():
    clock = Clock()
    reads = routing(clock)
    reads.observe(clock.now, 500, 500)
    reads._unplaced["t"] = clock.now  # mark_written could not read the primary's position
    assert reads.reader("t") is PRIMARY
    reads.observe(clock.now, 600, 500)  # a sample begun before the write: not enough
    assert reads.reader("t") is PRIMARY
    clock.now += 0.1
    reads.observe(clock.now, 650, 650)  # after it: its position stands in for the write's
    assert reads.written("t") == 650
    assert reads.reader("t") is STANDBY
