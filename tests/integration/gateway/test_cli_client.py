"""The ``tandem`` client commands against a real gateway: keys, ingest with a progress
bar, search, sql, ask, and errors printed as status + field instead of a traceback."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from services.cli import _client
from services.cli._main import Commands
from tests.documents import padded_pdf, pdf_pages, workbook_bytes
from tests.integration.gateway.stack import PEPPER, start_gateway
from tests.integration.retrieval.stack import (
    held_document,
    new_tenant,
    query_one,
    start_retrieval,
    stored_documents,
)

pytestmark = pytest.mark.integration


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tandem")
    top = parser.add_subparsers(dest="command", required=True)
    bench = top.add_parser("bench").add_subparsers(dest="target")
    evals = top.add_parser("eval").add_subparsers(dest="target")
    _client.register(Commands(top=top, bench=bench, eval=evals))
    return parser


async def tandem(*argv: str) -> int:
    """Run one command in a worker thread (the gateway serves on this test's loop)."""
    args = _parser().parse_args(list(argv))
    code: int = await asyncio.to_thread(args.handler, args)
    return code


@pytest.fixture
def cli_env(gateway, pg_url, monkeypatch, tmp_path):
    monkeypatch.setenv("TANDEM_GATEWAY", gateway.address)
    monkeypatch.setenv("DATABASE_URL", pg_url)
    monkeypatch.setenv("GATEWAY_KEY_PEPPER", PEPPER.decode())
    monkeypatch.setenv("TANDEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("TANDEM_API_KEY", raising=False)
    return gateway


async def _new_key(capsys, tenant: str, *scopes: str) -> str:
    flags = [arg for scope in scopes for arg in ("--scope", scope)]
    assert await tandem("keys", "create", "--tenant", tenant, *flags, "--json") == 0
    return str(json.loads(capsys.readouterr().out)["api_key"])


async def test_keys_create_list_revoke(cli_env, pg_url, capsys, monkeypatch):
    tenant = new_tenant(pg_url, "cli")
    key = await _new_key(capsys, tenant)
    assert key.startswith("tdm_")
    assert await tandem("keys", "list", "--tenant", tenant) == 0
    listed = capsys.readouterr().out
    key_id = key.split("_")[1]
    assert key_id in listed and "active" in listed
    assert key[len("tdm_") + 17 :] not in listed  # the secret is never shown again
    monkeypatch.setenv("TANDEM_API_KEY", key)
    assert await tandem("sql", "How many companies are there?") == 0
    capsys.readouterr()
    assert await tandem("keys", "revoke", key_id, "--tenant", "someone-else") == 1
    assert await tandem("keys", "revoke", key_id, "--tenant", tenant) == 0
    capsys.readouterr()
    assert await tandem("sql", "How many companies are there?") == 1
    err = capsys.readouterr().err
    assert "UNAUTHENTICATED" in err and "Traceback" not in err


async def test_a_key_does_only_what_its_scopes_allow(
    cli_env, pg_url, capsys, monkeypatch, tmp_path
):
    tenant = new_tenant(pg_url, "cli")
    key = await _new_key(capsys, tenant)  # the default: ask only
    key_id = key.split("_")[1]
    assert await tandem("keys", "list", "--tenant", tenant, "--json") == 0
    assert json.loads(capsys.readouterr().out)[0]["scopes"] == ["ask"]
    monkeypatch.setenv("TANDEM_API_KEY", key)
    doc = tmp_path / "note.md"
    doc.write_text("# Note\n\nKestrel Freight asked about exports.\n")
    assert await tandem("ingest", str(doc)) == 1
    err = capsys.readouterr().err
    assert "PERMISSION_DENIED" in err and "'ingest' scope" in err
    assert await tandem("keys", "scope", key_id, "--set", "ask,ingest") == 0
    assert "ask, ingest" in capsys.readouterr().out
    assert await tandem("ingest", str(doc)) == 0  # in effect at once
    capsys.readouterr()
    assert await tandem("keys", "scope", key_id, "--set", "ask") == 0
    assert await tandem("ingest", str(doc)) == 1
    assert "'ingest' scope" in capsys.readouterr().err
    assert await tandem("keys", "create", "--tenant", tenant, "--scope", "everything") == 1
    assert "unknown scope everything" in capsys.readouterr().err


async def test_keys_name_their_kind_and_act_as_is_granted_only_by_name(
    cli_env, pg_url, capsys, monkeypatch
):
    tenant = new_tenant(pg_url, "cli")
    service = await _new_key(capsys, tenant, "all")
    acting = await _new_key(capsys, tenant, "all,act_as")
    assert await tandem("keys", "list", "--tenant", tenant, "--json") == 0
    kinds = {r["key_id"]: (r["kind"], r["scopes"]) for r in json.loads(capsys.readouterr().out)}
    assert kinds == {
        service.split("_")[1]: ("service", ["ask", "ingest", "teach", "admin"]),
        acting.split("_")[1]: ("acts as principals", ["ask", "ingest", "teach", "admin", "act_as"]),
    }
    assert await tandem("keys", "list", "--tenant", tenant) == 0
    table = capsys.readouterr().out
    assert "kind" in table and "service" in table and "acts as principals" in table
    # An act_as key's call that names nobody is refused, never served the full view.
    monkeypatch.setenv("TANDEM_API_KEY", acting)
    assert await tandem("sql", "How many companies are there?") == 1
    err = capsys.readouterr().err
    assert "INVALID_ARGUMENT" in err and "x-tandem-principal" in err
    # Narrowed back to a service key, in effect at once.
    assert await tandem("keys", "scope", acting.split("_")[1], "--set", "all") == 0
    assert "kind: service" in capsys.readouterr().out
    assert await tandem("sql", "How many companies are there?") == 0


async def test_ingest_then_search_with_progress_on_stderr(cli_env, pg_url, capsys, tmp_path):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"), "ask,ingest")
    docs = tmp_path / "docs"
    (docs / "notes").mkdir(parents=True)
    (docs / "notes" / "kestrel.md").write_text(
        "# Kestrel Freight call\n\nKestrel Freight asked about the audit log export.\n"
    )
    (docs / "policy.txt").write_text("Refunds are issued within thirty days of purchase.\n")
    (docs / "image.gif").write_bytes(b"GIF89a")
    # A dry run says what it would write, document by document, and writes nothing.
    assert await tandem("ingest", str(docs), "--api-key", key, "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("2 documents: 2 included") and "would write 0 " not in lines[0]
    planned = [line for line in lines[1:] if line.startswith("  would write ")]
    assert len(planned) == 2 and all(" 0 chunks" not in line for line in planned)
    assert {line.rsplit("/", 1)[-1] for line in planned} == {"kestrel.md", "policy.txt"}
    written = re.search(r"would write (\d+) chunks", lines[0])
    assert written is not None and "1 file(s) skipped" in lines[0]  # image.gif, with reason
    assert sum(int(line.split()[2]) for line in planned) == int(written.group(1))
    assert await tandem("ingest", str(docs), "--api-key", key, "--category", "notes") == 0
    out, err = capsys.readouterr()
    assert "2 documents: 2 included" in out
    assert "ingest [" in err and "2/2 documents" in err
    assert await tandem("search", "Kestrel audit log export", "--api-key", key) == 0
    out = capsys.readouterr().out
    assert "Kestrel Freight call" in out and "[notes/kestrel.md]" in out
    # Unchanged files are recognised on a second run.
    assert await tandem("ingest", str(docs), "--api-key", key, "--category", "notes") == 0
    assert "2 unchanged" in capsys.readouterr().out


async def test_sql_prints_the_statement_and_a_table(cli_env, pg_url, capsys):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"))
    assert await tandem("sql", "How many companies are there?", "--api-key", key) == 0
    out = capsys.readouterr().out
    assert "SELECT" in out.upper() and "row(s)" in out


async def test_sql_draws_the_results_chart_through_the_gateway(cli_env, pg_url, capsys, tmp_path):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"))
    out = tmp_path / "industries.png"
    question = "How many companies are there per industry?"
    assert await tandem("sql", question, "--api-key", key, "--chart", str(out)) == 0
    printed = capsys.readouterr().out
    assert f"Chart: bar — count per industry; drawn to {out}" in printed
    assert out.read_bytes().startswith(b"\x89PNG") and out.stat().st_size > 5000
    spec = tmp_path / "industries.json"
    assert await tandem("sql", question, "--api-key", key, "--chart", str(spec)) == 0
    assert json.loads(spec.read_text())["mark"]["type"] == "bar"
    capsys.readouterr()
    # The rows alone, for a spreadsheet: the same result as CSV.
    assert await tandem("sql", question, "--api-key", key, "--format", "csv") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "industry,count" and len(lines) == len(spec_values(spec)) + 1


def spec_values(path: Path) -> list[dict[str, object]]:
    values: list[dict[str, object]] = json.loads(path.read_text())["data"]["values"]
    return values


async def test_ask_prints_the_answer_route_and_degradation(cli_env, pg_url, capsys):
    # No router runs behind this gateway: the answer is degraded, visibly, not a crash.
    key = await _new_key(capsys, new_tenant(pg_url, "cli"))
    assert await tandem("ask", "What did Kestrel ask about?", "--api-key", key) == 0
    out = capsys.readouterr().out
    assert "Route:" in out and "Degraded: router" in out
    assert await tandem("ask", "What did Kestrel ask?", "--stream", "--api-key", key) == 0
    assert "Route:" in capsys.readouterr().out


async def test_errors_print_status_and_field_not_a_traceback(cli_env, pg_url, capsys):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"))
    assert await tandem("search", "x" * 2001, "--api-key", key) == 1
    err = capsys.readouterr().err
    assert "INVALID_ARGUMENT" in err and "field query" in err and "Traceback" not in err
    assert await tandem("search", "anything") == 1
    assert "TANDEM_API_KEY" in capsys.readouterr().err
    assert await tandem("search", "anything", "--api-key", "tdm_nope") == 1
    assert "UNAUTHENTICATED" in capsys.readouterr().err


async def test_an_unreachable_gateway_is_one_line(cli_env, capsys, unused_tcp_port):
    code = await tandem(
        "search", "x", "--api-key", "tdm_x", "--gateway", f"127.0.0.1:{unused_tcp_port}",
        "--timeout", "2",
    )  # fmt: skip
    assert code == 1
    assert "cannot reach the gateway" in capsys.readouterr().err


def test_every_client_command_has_help_and_a_handler():
    parser = _parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("ask", "search", "sql", "ingest"):
        leaf = top.choices[name]
        assert leaf.format_help().strip() and callable(leaf.get_default("handler"))
    keys = top.choices["keys"]
    actions = next(a for a in keys._actions if isinstance(a, argparse._SubParsersAction))
    assert set(actions.choices) == {"create", "list", "revoke", "scope"}
    for leaf in actions.choices.values():
        assert leaf.format_help().strip() and callable(leaf.get_default("handler"))


def test_discovery_keeps_stable_ids_and_skips_other_files(tmp_path: Path):
    (tmp_path / "a" / ".hidden").mkdir(parents=True)
    (tmp_path / "a" / "one.md").write_text("# One\n")
    (tmp_path / "a" / ".hidden" / "two.md").write_text("# Two\n")
    (tmp_path / "a" / "three.TXT").write_text("three")
    (tmp_path / "a" / "four.pdf").write_bytes(b"%PDF")
    (tmp_path / "a" / "five.gif").write_bytes(b"GIF89a")
    found, skipped = _client.discover([tmp_path / "a"])
    # PDFs (and Word, PowerPoint, Excel, CSV, HTML) go to the server as they are.
    assert [doc_id for _, doc_id in found] == ["four.pdf", "one.md", "three.TXT"]
    found = found[1:]
    doc = _client.document_for(found[0][0], found[0][1], "notes")
    assert doc.title == "One" and doc.category == "notes" and doc.uri.startswith("file://")
    # Every other file is accounted for, with its reason (they were skipped silently).
    reasons = {item.path.name: item.reason for item in skipped}
    assert reasons["two.md"].startswith("hidden")
    assert reasons["five.gif"].startswith("unsupported type (.gif): PDF (scans read by OCR), Word")


@pytest.mark.parametrize(
    ("raw", "text", "note"),
    [
        ("Café prices rose.".encode("cp1252"), "Café prices rose.", "decoded as cp1252"),
        ("Zoë".encode("utf-16"), "Zoë", "decoded as utf-16"),
        ("\ufeffPlain".encode(), "Plain", ""),
        (b"A\x00B", None, "binary content (NUL bytes)"),
        (b"   \n", None, "empty"),
    ],
    ids=["cp1252", "utf16-bom", "utf8-bom", "nul", "empty"],
)
def test_each_file_is_read_or_skipped_with_its_reason(tmp_path: Path, raw, text, note):
    path = tmp_path / "doc.txt"
    path.write_bytes(raw)
    got, why = _client.read_document(path)
    assert got == text and why.startswith(note)


def test_a_file_over_the_limit_is_named_with_the_real_limit(tmp_path: Path):
    path = tmp_path / "big.txt"
    path.write_text("x" * (_client.MAX_DOCUMENT_CHARS + 1))
    assert _client.read_document(path) == (
        None,
        f"too large: {_client.MAX_DOCUMENT_CHARS + 1:,} characters; the limit is 1,000,000",
    )
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as out:
        out.truncate(4 * _client.MAX_DOCUMENT_CHARS + 1)  # never read into memory
    text, why = _client.read_document(huge)
    assert text is None and why.startswith("too large: 4,000,001 bytes")


async def test_one_bad_file_never_aborts_the_folder(cli_env, pg_url, capsys, tmp_path):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"), "ask,ingest")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nRefunds take thirty days.\n")
    (docs / "latin.txt").write_bytes("Café opening hours.".encode("cp1252"))
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02")
    (docs / "slides.pptx").write_bytes(b"PK")
    (docs / "report.pdf").write_bytes(pdf_pages([["Refund requests need a receipt."]]))
    (docs / "photo.gif").write_bytes(b"GIF89a")
    # The broken deck fails on the server, by name and reason: exit code 1, the rest in.
    assert await tandem("ingest", str(docs), "--api-key", key) == 1
    out, err = capsys.readouterr()
    assert "4 documents: 3 included, 0 unchanged, 0 excluded, 1 failed" in out
    assert "2 file(s) skipped" in out
    assert "binary.txt: binary content" in err and "photo.gif: unsupported type" in err
    assert "latin.txt: decoded as cp1252" in err
    assert "failed slides.pptx: " in err
    assert await tandem("search", "refund receipt", "--api-key", key) == 0
    out = capsys.readouterr().out
    assert "report / page 1  [report.pdf]" in out and "Refund requests need a receipt" in out


async def test_a_dry_run_says_what_each_file_would_have_redacted(cli_env, pg_url, capsys, tmp_path):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"), "ask,ingest")
    (tmp_path / "contacts.md").write_text(
        "# Contacts\n\nJane (jane.doe@gmail.com, +44 7700 900123) owns the renewal.\n"
    )
    assert await tandem("ingest", str(tmp_path), "--api-key", key, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "redacted: EMAIL_ADDRESS 1, PHONE_NUMBER 1 in 1 file(s)" in out
    assert "contacts.md (would redact EMAIL_ADDRESS 1, PHONE_NUMBER 1)" in out


async def test_a_same_id_file_from_another_folder_is_reported_when_it_replaces(
    cli_env, pg_url, capsys, tmp_path
):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"), "ask,ingest")
    for region in ("eu", "us"):
        (tmp_path / region).mkdir()
        (tmp_path / region / "shipping.md").write_text(f"# Shipping\n\n{region} ships in 3 days.\n")
    assert await tandem("ingest", str(tmp_path / "eu"), "--api-key", key) == 0
    assert "(1 replaced" not in capsys.readouterr().out
    assert await tandem("ingest", str(tmp_path / "us"), "--api-key", key) == 0
    out, err = capsys.readouterr()
    assert "1 documents: 1 included" in out and "(1 replaced a stored copy)" in out
    assert "replaced the stored 'shipping.md' with file://" in err and "/us/shipping.md" in err


async def test_what_the_server_left_out_of_a_file_is_printed(cli_env, pg_url, capsys, tmp_path):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"), "ask,ingest")
    (tmp_path / "orders.xlsx").write_bytes(workbook_bytes(order_rows=2100))
    assert await tandem("ingest", str(tmp_path), "--api-key", key) == 0
    err = capsys.readouterr().err
    assert "orders.xlsx (read as XLSX): " in err and "2000" in err and "Orders" in err


async def test_a_file_past_one_message_is_uploaded_in_pieces(cli_env, pg_url, capsys, tmp_path):
    key = await _new_key(capsys, new_tenant(pg_url, "cli"), "ask,ingest")
    (tmp_path / "annual.pdf").write_bytes(padded_pdf(17, "Warranty claims need the receipt."))
    (tmp_path / "small.md").write_text("# Small\n\nReturns take thirty days.\n")
    assert await tandem("ingest", str(tmp_path), "--api-key", key) == 0
    assert "2 documents: 2 included" in capsys.readouterr().out
    assert await tandem("search", "warranty claims receipt", "--api-key", key) == 0
    assert "annual / page 1  [annual.pdf]" in capsys.readouterr().out


@dataclass
class OwnRetrieval:
    """A retrieval service of the test's own (to stop and start again on its port) and a
    gateway in front of it."""

    pg_url: str
    embedding: Any
    sql: Any
    telemetry_sink: Any
    router_addr: str
    started: list[Any] = field(default_factory=list)

    async def retrieval(self, port: int = 0) -> Any:
        self.started.append(
            await start_retrieval(
                self.pg_url,
                self.embedding.server.address,
                self.telemetry_sink("retrieval").telemetry,
                server={"port": port},
            )
        )
        return self.started[-1]

    async def gateway(self, retrieval: Any) -> Any:
        self.started.append(
            await start_gateway(
                self.pg_url,
                self.telemetry_sink("gateway").telemetry,
                router_addr=self.router_addr,
                retrieval_addr=retrieval.server.address,
                sql_addr=self.sql.address,
            )
        )
        return self.started[-1]


@pytest.fixture
async def own(pg_url, embedding, sql, telemetry_sink, unused_tcp_port):
    made = OwnRetrieval(pg_url, embedding, sql, telemetry_sink, f"127.0.0.1:{unused_tcp_port}")
    yield made
    for service in reversed(made.started):
        await service.close()


async def test_an_ingest_cut_midway_resumes_with_what_was_not_committed(
    own, pg_url, monkeypatch, capsys, tmp_path
):
    """Issue 46 item 7: the retrieval service goes away after two of four files are
    committed (the third is held at its write), and comes back: ``tandem ingest`` resumes
    with the two it had not settled, and every file is stored once, whole."""
    retrieval = await own.retrieval()
    port = retrieval.server.port
    gateway = await own.gateway(retrieval)
    tenant = new_tenant(pg_url, "cli")
    monkeypatch.setenv("TANDEM_GATEWAY", gateway.address)
    monkeypatch.setenv("TANDEM_API_KEY", await gateway.key(tenant))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("1-a", "2-b", "3-held", "4-d"):
        (docs / f"{name}.md").write_text(f"# Note {name}\n\nThe renewal terms of {name}.\n")
    assert await tandem("ingest", str(docs / "3-held.md")) == 0
    capsys.readouterr()
    (docs / "3-held.md").write_text("# Note 3-held\n\nA changed note, held at its write.\n")
    before = stored_documents(pg_url, tenant)
    with held_document(pg_url, tenant, "3-held.md"):
        running = asyncio.create_task(tandem("ingest", str(docs)))
        for _ in range(600):
            if {"1-a.md", "2-b.md"} <= set(stored_documents(pg_url, tenant)):
                break
            await asyncio.sleep(0.05)
        await retrieval.server.stop(0)  # cut midway, as a connection's age once did
    await own.retrieval(port)  # back on the same port
    assert await running == 0
    out, err = capsys.readouterr()
    assert "2 of 4 documents settled; resuming with the 2 left" in err, err
    assert out.startswith("4 documents: 4 included, 0 unchanged"), out
    stored = stored_documents(pg_url, tenant)
    assert set(stored) == {"1-a.md", "2-b.md", "3-held.md", "4-d.md"}
    assert stored["3-held.md"] != before["3-held.md"]
    # Each document's chunks once: none written twice by the resume.
    extra = query_one(
        pg_url,
        "SELECT count(*) FROM retrieval_chunks c JOIN retrieval_documents d USING "
        "(tenant_id, document_id) WHERE c.tenant_id = %s AND c.ordinal >= d.chunk_count",
        (tenant,),
    )
    assert extra == 0
