"""``tandem chat`` and ``tandem conversations``: asking in turns.

``chat`` is an interactive loop over the gateway's Ask that keeps the conversation id the
first answer returns, so follow-ups ("and in 2024?", "the second one") are resolved
against the earlier turns; ``conversations`` lists and deletes the tenant's conversations.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

import grpc

from services.cli._client import ASK_MODES, render_answer
from services.cli._plumbing import (
    call_metadata,
    common_arguments,
    describe_rpc_error,
    enum_name,
    gateway_stub,
    handled,
    print_json,
)
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import router_service_pb2 as qpb

if TYPE_CHECKING:
    from services.cli._main import Commands

_QUIT = frozenset({"exit", "quit", ":q", "/quit", "/exit"})


def register(commands: Commands) -> None:
    chat = commands.top.add_parser(
        "chat",
        help="ask in turns: follow-ups are answered in the conversation",
        description="An interactive loop over Ask that keeps the conversation id. Type a "
        "question per line; 'exit' or end of input (Ctrl-D) stops.",
    )
    chat.add_argument("--conversation", default="", metavar="ID", help="continue this one")
    chat.add_argument(
        "--database", default="", help="SQL database for every turn (default: the tenant's)"
    )
    chat.add_argument(
        "--mode",
        choices=sorted(ASK_MODES),
        default="auto",
        help="auto: plan; retrieve: one search; agentic: RAG loop; sql",
    )
    common_arguments(chat)
    chat.set_defaults(handler=_chat)

    conversations = commands.top.add_parser(
        "conversations", help="list or delete the tenant's conversations"
    )
    actions = conversations.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="most recently active first")
    listing.add_argument("--page-size", type=int, default=50)
    common_arguments(listing)
    listing.set_defaults(handler=_list)
    delete = actions.add_parser("delete", help="delete one conversation and its turns")
    delete.add_argument("conversation_id")
    common_arguments(delete)
    delete.set_defaults(handler=_delete)


def chat_loop(
    stub: gpb_grpc.GatewayServiceStub,
    lines: Iterable[str],
    out: TextIO,
    *,
    metadata: tuple[tuple[str, str], ...],
    conversation_id: str = "",
    timeout: float = 60.0,
    address: str = "",
    prompt: bool = True,
    mode: str = "auto",
    database: str = "",
) -> str:
    """Ask each line in one conversation; returns its id. A failed turn prints its error
    and the loop goes on (the conversation is unchanged)."""

    def ask_prompt() -> None:
        if prompt:
            out.write("you> ")
            out.flush()

    ask_prompt()
    for raw in lines:
        question = raw.strip()
        if question.lower() in _QUIT:
            break
        if not question:
            ask_prompt()
            continue
        try:
            reply = stub.Ask(
                gpb.GatewayServiceAskRequest(
                    question=question,
                    conversation_id=conversation_id,
                    mode=ASK_MODES[mode],
                    options=qpb.AskOptions(database=database),
                ),
                metadata=metadata,
                timeout=timeout,
            )
        except grpc.RpcError as exc:
            out.write(describe_rpc_error(exc, address) + "\n")
        else:
            conversation_id = reply.answer.conversation_id or conversation_id
            out.write(render_answer(reply.answer) + "\n")
        ask_prompt()
    if prompt:
        out.write("\n")
    return conversation_id


@handled
def _chat(args: argparse.Namespace) -> int:
    channel, stub = gateway_stub(args)
    with channel:
        interactive = sys.stdin.isatty()
        if interactive:
            print("Ask a question; follow-ups are answered in context. 'exit' stops.")
        conversation_id = chat_loop(
            stub, sys.stdin, sys.stdout, metadata=call_metadata(args),
            conversation_id=args.conversation, timeout=args.timeout,
            address=str(args.gateway or ""), prompt=interactive,
            mode=args.mode, database=args.database,
        )  # fmt: skip
    if conversation_id:
        print(f"conversation {conversation_id} (continue with --conversation)", file=sys.stderr)
    return 0


@handled
def _list(args: argparse.Namespace) -> int:
    channel, stub = gateway_stub(args)
    with channel:
        reply = stub.ListConversations(
            gpb.GatewayServiceListConversationsRequest(page_size=args.page_size),
            metadata=call_metadata(args), timeout=args.timeout,
        )  # fmt: skip
    if args.json:
        print_json(reply, sys.stdout)
        return 0
    for item in reply.conversations:
        when = item.update_time.ToDatetime().strftime("%Y-%m-%d %H:%M")
        print(f"{item.conversation_id}  {when}  {item.turn_count:>3} turns  {item.title}")
    if not reply.conversations:
        print("no conversations")
    return 0


@handled
def _delete(args: argparse.Namespace) -> int:
    channel, stub = gateway_stub(args)
    with channel:
        reply = stub.DeleteConversation(
            gpb.GatewayServiceDeleteConversationRequest(conversation_id=args.conversation_id),
            metadata=call_metadata(args), timeout=args.timeout,
        )  # fmt: skip
    if args.json:
        print_json(reply, sys.stdout)
    else:
        print(f"deleted {args.conversation_id} ({reply.turns_deleted} turns)")
    return 0


def kind_name(kind: int) -> str:
    """A follow-up kind as the CLI prints it."""
    return enum_name(qpb.FollowUpKind, kind, "FOLLOW_UP_KIND_").lower()
