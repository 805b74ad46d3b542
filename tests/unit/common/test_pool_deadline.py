"""A wait for a database connection cut by the caller's deadline is DEADLINE_EXCEEDED, not
UNAVAILABLE: the database was not shown to be down, and a retry (what UNAVAILABLE invites)
would not have been answered either. Without a deadline in play a pool timeout stays
UNAVAILABLE with the database reason (a dead database)."""

from __future__ import annotations

import time

import grpc
import psycopg_pool

from services.common import deadline_scope, map_db_error
from services.sql.gate._execute import FailureKind, classify


def test_a_pool_timeout_past_the_callers_deadline_is_deadline_exceeded():
    with deadline_scope(0.01):
        time.sleep(0.02)
        error = map_db_error(psycopg_pool.PoolTimeout("couldn't get a connection"))
        assert error.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert classify(psycopg_pool.PoolTimeout(), deadline_bound=True).kind is (
            FailureKind.DEADLINE
        )


def test_a_pool_timeout_with_time_left_is_the_database_unavailable():
    error = map_db_error(psycopg_pool.PoolTimeout("couldn't get a connection"))
    assert (error.code, error.reason) == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE")
    with deadline_scope(30.0):
        assert map_db_error(psycopg_pool.PoolTimeout()).code == grpc.StatusCode.UNAVAILABLE
        assert classify(psycopg_pool.PoolTimeout(), deadline_bound=True).kind is (
            FailureKind.UNAVAILABLE
        )
