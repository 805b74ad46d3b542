"""``tandem audit``: the tenant's audit trail, through the gateway's ListAuditEvents.

It needs a key with the ``admin`` scope. Every page is fetched in turn (``--limit``
stops early); ``--json`` prints one JSON object per event (JSON lines, for a pipe),
otherwise an aligned table. The trail holds identifiers and outcomes only, never
questions or answers, so nothing printed here needs redacting.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format

from services.cli._client import render_table
from services.cli._plumbing import CliError, call_metadata, common_arguments, gateway_stub, handled
from tandem.v1 import gateway_service_pb2 as gpb

if TYPE_CHECKING:
    from services.cli._main import Commands

PAGE_SIZE = 200
COLUMNS = ("time", "rpc", "status", "key id", "principal", "route", "documents", "tables")


def register(commands: Commands) -> None:
    audit = commands.top.add_parser(
        "audit",
        help="list the tenant's audit trail (admin key): who called what, and how it ended",
        description="Page through ListAuditEvents, newest first.",
    )
    audit.add_argument("--principal", default="", help="only this principal's calls")
    audit.add_argument("--key-id", default="", help="only this key's calls")
    audit.add_argument("--rpc", default="", help="only this RPC's calls, e.g. Ask")
    audit.add_argument(
        "--outcome", default="", help="only calls that ended so, e.g. OK or PERMISSION_DENIED"
    )
    audit.add_argument("--since", default="", help="from this ISO time on, e.g. 2026-01-31")
    audit.add_argument("--until", default="", help="before this ISO time")
    audit.add_argument("--limit", type=int, default=0, help="at most this many events (0: all)")
    common_arguments(audit)
    audit.set_defaults(handler=_audit)


def _time(value: str, flag: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise CliError(f"{flag}: not an ISO time (e.g. 2026-01-31 or 2026-01-31T12:00)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def request_for(args: argparse.Namespace) -> gpb.GatewayServiceListAuditEventsRequest:
    request = gpb.GatewayServiceListAuditEventsRequest(
        page_size=PAGE_SIZE if not args.limit else min(PAGE_SIZE, args.limit),
        principal_id=args.principal, key_id=args.key_id, rpc=args.rpc,
        outcome=args.outcome.upper(),
    )  # fmt: skip
    for field, value, flag in (("start_time", args.since, "--since"),
                               ("end_time", args.until, "--until")):  # fmt: skip
        stamp = _time(value, flag)
        if stamp is not None:
            getattr(request, field).FromDatetime(stamp)
    return request


def events(stub: Any, request: Any, metadata: Any, timeout: float) -> Iterator[gpb.AuditEvent]:
    """Every event the request selects, page after page."""
    while True:
        page = stub.ListAuditEvents(request, metadata=metadata, timeout=timeout)
        yield from page.events
        if not page.next_page_token:
            return
        request.page_token = page.next_page_token


def row(event: gpb.AuditEvent) -> list[str]:
    status = event.status + (f" ({event.reason})" if event.reason else "")
    return [
        event.event_time.ToDatetime(UTC).strftime("%Y-%m-%d %H:%M:%S"),
        event.rpc, status, event.key_id, event.principal_id or "-",
        event.route.removeprefix("ROUTE_").lower() or "-",
        ",".join(event.document_ids) or "-", ",".join(event.tables_read) or "-",
    ]  # fmt: skip


@handled
def _audit(args: argparse.Namespace) -> int:
    channel, stub = gateway_stub(args)
    found: list[gpb.AuditEvent] = []
    with channel:
        for event in events(stub, request_for(args), call_metadata(args), args.timeout):
            found.append(event)
            if args.json:
                sys.stdout.write(json.dumps(json_format.MessageToDict(event)) + "\n")
            if args.limit and len(found) >= args.limit:
                break
    if args.json:
        return 0
    if not found:
        print("No audit events.")
        return 0
    print(render_table(COLUMNS, [row(e) for e in found]))
    return 0
