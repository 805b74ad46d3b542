"""The demo warehouse reader's URL, derived from the admin URL (services.sql.reader_url)."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict

from services.sql import reader_url


def test_a_read_write_pair_url_gives_a_reader_that_prefers_the_standby() -> None:
    # The admin URL of a primary + standby pair (infra/compose.ha.yaml) asks for
    # read-write; the reader's sessions are read only, so keeping it refused every node
    # (make container-test: "session is read-only" on both, AskSql UNAVAILABLE).
    admin = (
        "postgresql://tandem:secret@postgres:5432,postgres-standby:5432/tandem"
        "?target_session_attrs=read-write&connect_timeout=3"
    )
    params = conninfo_to_dict(reader_url(admin, "warehouse", "tandem_reader"))
    assert params["target_session_attrs"] == "prefer-standby"
    assert "password" not in params
    assert params["host"] == "postgres,postgres-standby"
    assert params["port"] == "5432,5432"
    assert (params["user"], params["dbname"], params["connect_timeout"]) == (
        "tandem_reader", "warehouse", "3",
    )  # fmt: skip


def test_a_single_node_url_keeps_its_reader_as_it_was() -> None:
    params = conninfo_to_dict(reader_url("host=/data/pg user=postgres", "w", "tandem_reader"))
    assert "target_session_attrs" not in params
    assert (params["host"], params["user"], params["dbname"]) == ("/data/pg", "tandem_reader", "w")
