"""``tandem sql teach | memory list | memory delete | feedback``: the answer memory.

These ride on ``tandem sql`` (whose first positional is otherwise the question): when the
first word is one of the commands and more words follow, the words are the command and
its arguments — ``tandem sql teach "QUESTION" "SQL" --database D``. A question that is
exactly one of these words still works when quoted alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from services.cli import _plumbing as client
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import sql_service_pb2 as spb

COMMANDS = frozenset({"teach", "memory", "feedback"})
USAGE = (
    'tandem sql teach "QUESTION" "SQL" [--database D] | tandem sql memory list [--database D] '
    "| tandem sql memory delete PAIR_ID | tandem sql feedback ANSWER_ID helpful|wrong "
    '[--corrected-sql "SQL"] [--note TEXT]'
)


def is_command(words: Sequence[str]) -> bool:
    return len(words) > 1 and words[0] in COMMANDS


def run(args: argparse.Namespace) -> int:
    """Dispatch ``args.question`` (the positional words) to one memory command; called
    inside ``tandem sql``'s handler, which turns RPC errors into messages."""
    words = list(args.question)
    command, rest = words[0], words[1:]
    if command == "teach" and len(rest) == 2:
        return _teach(args, rest[0], rest[1])
    if command == "memory" and rest == ["list"]:
        return _list(args)
    if command == "memory" and len(rest) == 2 and rest[0] == "delete":
        return _delete(args, rest[1])
    if command == "feedback" and len(rest) == 2 and rest[1] in ("helpful", "wrong"):
        return _feedback(args, rest[0], rest[1])
    raise client.CliError(f"usage: {USAGE}")


def _pair_line(pair: spb.ConfirmedPair) -> str:
    source = client.enum_name(
        spb.ConfirmedPairSource, pair.source, "CONFIRMED_PAIR_SOURCE_"
    ).lower()
    created = pair.create_time.ToDatetime().strftime("%Y-%m-%d %H:%M")
    return (
        f"{pair.pair_id}  {pair.database}  {source:<9} used {pair.use_count}x  {created}\n"
        f"  Q: {pair.question}\n  SQL: {pair.sql}"
    )


def _teach(args: argparse.Namespace, question: str, sql: str) -> int:
    channel, stub = client.gateway_stub(args)
    with channel:
        reply = stub.TeachSql(
            gpb.GatewayServiceTeachSqlRequest(database=args.database, question=question, sql=sql),
            metadata=client.call_metadata(args),
            timeout=args.timeout,
        )
    if args.json:
        client.print_json(reply, sys.stdout)
    else:
        print("taught:\n" + _pair_line(reply.pair))
    return 0


def _list(args: argparse.Namespace) -> int:
    channel, stub = client.gateway_stub(args)
    pairs: list[spb.ConfirmedPair] = []
    token = ""
    with channel:
        while True:
            reply = stub.ListConfirmedPairs(
                gpb.GatewayServiceListConfirmedPairsRequest(
                    database=args.database, page_size=200, page_token=token
                ),
                metadata=client.call_metadata(args),
                timeout=args.timeout,
            )
            pairs += reply.pairs
            token = reply.next_page_token
            if not token:
                break
    if args.json:
        client.print_json(gpb.GatewayServiceListConfirmedPairsResponse(pairs=pairs), sys.stdout)
        return 0
    for pair in pairs:
        print(_pair_line(pair))
    print(f"{len(pairs)} confirmed pair(s)")
    return 0


def _delete(args: argparse.Namespace, pair_id: str) -> int:
    channel, stub = client.gateway_stub(args)
    with channel:
        stub.DeleteConfirmedPair(
            gpb.GatewayServiceDeleteConfirmedPairRequest(pair_id=pair_id),
            metadata=client.call_metadata(args),
            timeout=args.timeout,
        )
    print(f"deleted {pair_id}")
    return 0


def _feedback(args: argparse.Namespace, answer_id: str, rating: str) -> int:
    channel, stub = client.gateway_stub(args)
    with channel:
        reply = stub.SubmitSqlFeedback(
            gpb.GatewayServiceSubmitSqlFeedbackRequest(
                answer_id=answer_id,
                rating=spb.FEEDBACK_RATING_HELPFUL
                if rating == "helpful"
                else spb.FEEDBACK_RATING_WRONG,
                corrected_sql=args.corrected_sql,
                note=args.note,
            ),
            metadata=client.call_metadata(args),
            timeout=args.timeout,
        )
    if args.json:
        client.print_json(reply, sys.stdout)
    elif reply.HasField("pair"):
        print("thanks; confirmed for reuse:\n" + _pair_line(reply.pair))
    else:
        print(f"thanks; feedback {reply.feedback_id} recorded")
    return 0
