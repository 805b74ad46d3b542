"""Every ``tandem`` command parses, has help, and dispatches to a handler."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import services.cli._builtin as builtin
from services.cli._main import build_parser, main
from services.embedding._errors import EmbeddingModelError


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, parser)]
    leaves = []
    for name, child in subs[0].choices.items():
        leaves.extend(_leaves(child, (*path, name)))
    return leaves


LEAVES = _leaves(build_parser())


def test_the_command_tree_is_not_empty() -> None:
    names = {" ".join(path) for path, _ in LEAVES}
    assert {"run", "bench embed", "eval sql"} <= names


@pytest.mark.parametrize(("path", "leaf"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_every_command_has_help_and_a_handler(
    path: tuple[str, ...], leaf: argparse.ArgumentParser
) -> None:
    assert leaf.format_help().strip()
    assert callable(leaf.get_default("handler")), f"tandem {' '.join(path)} has no handler"


def test_a_missing_subcommand_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["bench"])
    assert exit_info.value.code == 2


def test_eval_sql_takes_a_dataset_or_a_golden_file_not_both() -> None:
    args = build_parser().parse_args(["eval", "sql", "--dataset", "../shared/datasets/sql"])
    assert str(args.dataset) == "../shared/datasets/sql" and args.out is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "sql", "--dataset", "d", "--golden", "g.json"])


def test_eval_documents_runs_the_dev_set_in_retrieve_and_auto() -> None:
    args = build_parser().parse_args(["eval", "documents"])
    assert args.dataset == Path("services/bench/devsets/documents")
    assert args.modes == "retrieve,auto" and args.limit is None
    wrong = build_parser().parse_args(["eval", "documents", "--modes", "agentic"])
    with pytest.raises(SystemExit, match="unknown agentic"):
        builtin._eval_documents(wrong)


def test_sql_takes_instructions() -> None:
    args = build_parser().parse_args(
        ["sql", "What is the CPC?", "--instructions", "CPC = cost / clicks"]
    )
    assert args.instructions == "CPC = cost / clicks"
    assert build_parser().parse_args(["sql", "q"]).instructions == ""


def _run_main(argv: list[str]) -> int:
    return main(argv)


def test_a_known_error_is_one_line_and_a_hint_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    """`tandem eval retrieval` without a model: the embedding layer's own explanation."""
    monkeypatch.setenv("EMBEDDING_MODEL_PATH", str(tmp_path / "absent"))
    monkeypatch.setenv("TANDEM_DATA_DIR", str(tmp_path))
    assert _run_main(["eval", "retrieval", "--out", str(tmp_path / "r.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "Traceback" not in "\n".join(err)
    assert err[0].startswith("error: EMBEDDING_MODEL_PATH=") and "not a directory" in err[0]
    assert err[1].startswith("hint: ") and "--debug" in err[1]


def test_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL_PATH", str(tmp_path / "absent"))
    monkeypatch.setenv("TANDEM_DATA_DIR", str(tmp_path))
    with pytest.raises(EmbeddingModelError):
        _run_main(["eval", "retrieval", "--out", str(tmp_path / "r.json"), "--debug"])


def test_an_unexpected_error_still_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise KeyError("a bug")

    monkeypatch.setattr(builtin, "_run", broken)
    with pytest.raises(KeyError):
        _run_main(["run"])


def test_tandem_run_records_spans_where_tandem_trace_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.cli._run import _service_env
    from services.cli._trace import default_dir

    monkeypatch.setenv("TANDEM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("TANDEM_TRACE_DIR", raising=False)
    env, _ = _service_env({})
    assert Path(env["TANDEM_TRACE_DIR"]) == (tmp_path / "traces").resolve()
    assert default_dir().resolve() == Path(env["TANDEM_TRACE_DIR"])
    # blank (or another directory) is the user's choice and stays
    assert _service_env({"TANDEM_TRACE_DIR": ""})[0]["TANDEM_TRACE_DIR"] == ""


def test_tandem_run_binds_every_service_where_the_banner_says_it_listens() -> None:
    # The edge's own default (for containers) is every interface; under `tandem run` it
    # once listened there while the banner printed 127.0.0.1.
    from gateway.edge import EdgeSettings
    from services.cli._run import SERVICES, _service_env

    env, addresses = _service_env({})
    for spec in SERVICES:
        assert env[spec.host_variable] == "127.0.0.1"
        assert addresses[spec.name].startswith("127.0.0.1:")
    assert EdgeSettings.from_env(env).listen.startswith("127.0.0.1:")
    # A host the user chose stays theirs; the address to reach it is loopback.
    env, addresses = _service_env({"EDGE_HOST": "0.0.0.0"})
    assert env["EDGE_HOST"] == "0.0.0.0" and addresses["edge"].startswith("127.0.0.1:")


def test_tandem_run_replicas_get_their_own_ports_and_callers_balance_over_them() -> None:
    from services.cli._run import _service_env, instances
    from services.router import RouterSettings

    env, addresses = _service_env({"SQL_PORT": "6055"}, replicas=2)
    started = {i.name: i.address for i in instances(env, 2)}
    assert started == {
        "embedding": "127.0.0.1:50054",
        "retrieval": "127.0.0.1:50053",
        "retrieval-2": "127.0.0.1:50153",
        "sql": "127.0.0.1:6055",
        "sql-2": "127.0.0.1:6155",
        "router": "127.0.0.1:50052",
        "router-2": "127.0.0.1:50152",
        "gateway": "127.0.0.1:50051",
        "rest": "127.0.0.1:50056",
        "edge": "127.0.0.1:50050",
    }
    # Every caller of a replicated service dials all its replicas; the rest stay one.
    assert env["SQL_ADDR"] == "ipv4:127.0.0.1:6055,127.0.0.1:6155"
    assert RouterSettings.from_env(env).retrieval_addr == "ipv4:127.0.0.1:50053,127.0.0.1:50153"
    assert env["EMBEDDING_ADDR"] == "127.0.0.1:50054" == addresses["embedding"]
    assert env["GATEWAY_ADDR"] == "127.0.0.1:50051"
    assert [i.name for i in instances(env)] == [
        "embedding", "retrieval", "sql", "router", "gateway", "rest", "edge"
    ]  # fmt: skip


def test_tandem_run_port_base_moves_every_port_at_once() -> None:
    from services.cli._run import _service_env, instances, port_base_problem, shifted_ports

    env, addresses = _service_env(shifted_ports({"SQL_PORT": "6055"}, 41000), replicas=2)
    assert {i.name: i.address for i in instances(env, 2)} == {
        "edge": "127.0.0.1:41000",
        "gateway": "127.0.0.1:41001",
        "router": "127.0.0.1:41002",
        "router-2": "127.0.0.1:41102",
        "retrieval": "127.0.0.1:41003",
        "retrieval-2": "127.0.0.1:41103",
        "embedding": "127.0.0.1:41004",
        "rest": "127.0.0.1:41006",
        "sql": "127.0.0.1:6055",  # set explicitly: still wins
        "sql-2": "127.0.0.1:6155",
    }
    assert env["GATEWAY_ADDR"] == "127.0.0.1:41001" == addresses["gateway"]
    assert port_base_problem(41000, replicas=2) is None
    assert "between 1024 and 65529" in (port_base_problem(65533) or "")
    assert "between 1024 and 64829" in (port_base_problem(65000, replicas=8) or "")
    assert port_base_problem(80) is not None
    args = build_parser().parse_args(["run", "--port-base", "41000"])
    assert args.port_base == 41000


def test_tandem_run_replicas_need_an_ipv4_address() -> None:
    from services.cli._run import _service_env

    with pytest.raises(ValueError, match="need an IPv4 address"):
        _service_env({"ROUTER_HOST": "localhost"}, replicas=2)
    # One replica dials the name as before.
    assert _service_env({"ROUTER_HOST": "localhost"})[1]["router"] == "localhost:50052"


def test_tandem_run_refuses_a_replica_count_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for bad in ("0", "9", "two"):
        with pytest.raises(SystemExit):
            _run_main(["run", "--replicas", bad])
        assert "--replicas: must be a whole number from 1 to 8" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, True),  # the demo warehouse: its documents belong with it
        ({"SQL_DATABASES": "shop=postgresql://ro@db/shop"}, False),  # your own data
        ({"SQL_DATABASES": "shop=postgresql://ro@db/shop", "TANDEM_DEMO_DOCUMENTS": "true"}, True),
        ({"TANDEM_DEMO_DOCUMENTS": "false"}, False),
    ],
)
def test_demo_documents_load_only_beside_the_demo_warehouse_or_when_asked(
    environ: dict[str, str], wanted: bool
) -> None:
    # With SQL_DATABASES set they took 41 s to load and the first example printed failed
    # with PERMISSION_DENIED.
    from services.cli._run import EXAMPLES, OWN_DATA_EXAMPLES, demo_documents_wanted

    assert demo_documents_wanted(environ) is wanted
    assert not any("opportunities" in example for example in OWN_DATA_EXAMPLES)
    assert any("opportunities" in example for example in EXAMPLES)


def test_tandem_keys_finds_the_data_directory_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run outside the checkout it once failed: "Parent directory of pgdata does not exist".
    from services.cli import _client
    from services.cli._client import _key_store_environ
    from services.cli._plumbing import CliError

    checkout, elsewhere = tmp_path / "checkout", tmp_path / "elsewhere"
    (checkout / ".tandem").mkdir(parents=True)
    elsewhere.mkdir()
    monkeypatch.setattr(_client, "_CHECKOUT", checkout)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("TANDEM_DATA_DIR", raising=False)
    monkeypatch.chdir(elsewhere)
    assert _key_store_environ()["TANDEM_DATA_DIR"] == str(checkout / ".tandem")
    (elsewhere / ".tandem").mkdir()  # a data directory here wins
    assert "TANDEM_DATA_DIR" not in _key_store_environ()
    monkeypatch.setenv("TANDEM_DATA_DIR", "/srv/tandem")  # and a named one wins over both
    assert _key_store_environ()["TANDEM_DATA_DIR"] == "/srv/tandem"
    monkeypatch.delenv("TANDEM_DATA_DIR")
    (elsewhere / ".tandem").rmdir()
    (checkout / ".tandem").rmdir()
    with pytest.raises(CliError, match="TANDEM_DATA_DIR"):
        _key_store_environ()


def test_ingest_keep_names_personal_kinds_only():
    from services.cli._client import keep_policy
    from services.cli._plumbing import CliError
    from tandem.v1 import retrieval_service_pb2 as rpb

    assert keep_policy("") is None
    policy = keep_policy("email_address, REDACTION_KIND_IP_ADDRESS")
    assert policy is not None
    assert list(policy.keep_kinds) == [
        rpb.REDACTION_KIND_EMAIL_ADDRESS,
        rpb.REDACTION_KIND_IP_ADDRESS,
    ]
    for secret_or_unknown in ("API_KEY", "NOT_A_KIND"):
        with pytest.raises(CliError, match="only personal-data kinds may be kept"):
            keep_policy(secret_or_unknown)


def test_the_redaction_summary_names_the_settings_that_keep_a_kind():
    from services.cli._client import keeping_hint

    hint = keeping_hint(["EMAIL_ADDRESS", "IP_ADDRESS"], "manual")
    assert "--keep EMAIL_ADDRESS,IP_ADDRESS" in hint
    assert "RETRIEVAL_REDACTION_KEEP_BY_CATEGORY=manual=EMAIL_ADDRESS,IP_ADDRESS" in hint
    assert "RETRIEVAL_REDACTION_ALLOW" in hint
