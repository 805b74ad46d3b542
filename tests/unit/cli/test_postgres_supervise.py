"""``tandem postgres supervise``: its node flags (the compose wiring depends on them)."""

from __future__ import annotations

import pytest

from services.cli._main import main
from services.cli._postgres import _named_node
from services.pgha import NodeAddress


def test_a_node_is_named_by_its_host_unless_named() -> None:
    assert _named_node("postgres-b:5432") == ("postgres_b", NodeAddress("postgres-b", 5432))
    assert _named_node("standby=10.0.0.7:5433") == ("standby", NodeAddress("10.0.0.7", 5433))
    with pytest.raises(ValueError, match="HOST:PORT"):
        _named_node("postgres-b")
    with pytest.raises(ValueError, match="letters, digits"):
        _named_node("a b=host:5432")


def test_one_node_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["postgres", "supervise", "--node", "db:5432"]) == 2
    assert "at least two distinct nodes" in capsys.readouterr().err
    assert main(["postgres", "supervise", "--node", "db:5432", "--node", "db:5432"]) == 2


def test_the_role_and_database_default_to_libpqs_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # compose's monitor sets PGUSER/PGDATABASE (the superuser is `tandem` there): a
    # default of `postgres` written into the conninfo would override them.
    from services.cli._main import build_parser

    monkeypatch.setenv("PGUSER", "tandem")
    monkeypatch.setenv("PGDATABASE", "tandem")
    args = build_parser().parse_args(["postgres", "supervise", "--node", "a:1", "--node", "b:2"])
    assert (args.user, args.dbname) == ("tandem", "tandem")
    monkeypatch.delenv("PGUSER")
    monkeypatch.delenv("PGDATABASE")
    args = build_parser().parse_args(["postgres", "supervise", "--node", "a:1", "--node", "b:2"])
    assert (args.user, args.dbname) == ("postgres", "postgres")
