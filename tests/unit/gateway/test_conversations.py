"""How much of a conversation a follow-up is resolved against, and what a turn stores."""

from __future__ import annotations

import pytest

from gateway import GatewaySettings
from gateway._conversations import HistoryLimits, Turn, bounded, parse_id
from gateway._server import turn_from, turn_pb
from services.common import InvalidArgument, SettingsError
from tandem.v1 import router_service_pb2 as qpb


def _turn(n: int, members: tuple[str, ...] = ()) -> Turn:
    return Turn(question=f"question {n}", resolved_question=f"question {n}", members=members)


def test_only_the_newest_turns_are_kept_oldest_first():
    turns = [_turn(n) for n in range(10)]
    kept = bounded(turns, HistoryLimits(turns=3, chars=10_000))
    assert [t.question for t in kept] == ["question 7", "question 8", "question 9"]


def test_the_character_budget_drops_older_turns_first():
    turns = [_turn(n) for n in range(5)]  # 20 characters each
    kept = bounded(turns, HistoryLimits(turns=5, chars=45))
    assert [t.question for t in kept] == ["question 3", "question 4"]


def test_the_newest_turn_is_kept_alone_with_its_members_cut_to_fit():
    big = _turn(1, members=tuple(f"Company {i:02d}" for i in range(40)))
    (kept,) = bounded([_turn(0), big], HistoryLimits(turns=4, chars=60))
    assert kept.question == "question 1"
    # 60 characters less the two 10-character questions: four 10-character names.
    assert kept.members == ("Company 00", "Company 01", "Company 02", "Company 03")


def test_no_history_when_the_limits_allow_none():
    assert bounded([_turn(0)], HistoryLimits(turns=0, chars=4000)) == []


def test_a_conversation_id_must_be_a_uuid_naming_the_field():
    with pytest.raises(InvalidArgument) as err:
        parse_id("not-a-uuid")
    assert err.value.violations[0].field == "conversation_id"
    assert (
        parse_id("6F9619FF-8B86-4D11-B42D-00C04FC964FF") == "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
    )


def test_a_turn_keeps_the_routers_description_and_never_the_answer_text():
    answer = qpb.Answer(
        text="Count: 93. [1]",
        route=qpb.ROUTE_SQL,
        turn=qpb.ConversationTurn(
            resolved_question="How many open Security Suite opportunities are there in 2024?",
            follow_up_kind=qpb.FOLLOW_UP_KIND_TIME_SHIFT,
            members=["Monarch Care"],
            sql_fingerprints=["f538b5ed"],
            cited_chunk_ids=["c1"],
            row_count=1,
            sql="SELECT count(*) FROM opportunities",
        ),
    )
    turn = turn_from("and in 2024?", answer)
    assert turn.sql == "SELECT count(*) FROM opportunities"
    assert turn_pb(turn).sql == turn.sql  # what the router reads back
    assert turn.question == "and in 2024?"
    assert turn.resolved_question.endswith("in 2024?")
    assert (turn.route, turn.follow_up_kind) == (qpb.ROUTE_SQL, qpb.FOLLOW_UP_KIND_TIME_SHIFT)
    assert (turn.members, turn.sql_fingerprints, turn.cited_chunk_ids) == (
        ("Monarch Care",), ("f538b5ed",), ("c1",),
    )  # fmt: skip
    assert "93" not in repr(turn)


def test_an_unreachable_routers_answer_stores_the_question_alone():
    turn = turn_from("How many deals?", qpb.Answer(text="No answer: …"))
    assert (turn.question, turn.resolved_question, turn.members) == (
        "How many deals?", "How many deals?", (),
    )  # fmt: skip


def test_conversation_settings_come_from_the_environment_and_fail_naming_the_variable():
    assert GatewaySettings.from_env({}).conversations is True
    off = GatewaySettings.from_env({"GATEWAY_CONVERSATIONS": "false"})
    assert off.conversations is False
    tuned = GatewaySettings.from_env(
        {"GATEWAY_CONVERSATION_RETENTION_DAYS": "7", "GATEWAY_CONVERSATION_HISTORY_TURNS": "2"}
    )
    assert (tuned.conversation_retention_days, tuned.conversation_history_turns) == (7, 2)
    with pytest.raises(SettingsError, match="GATEWAY_CONVERSATION_RETENTION_DAYS"):
        GatewaySettings.from_env({"GATEWAY_CONVERSATION_RETENTION_DAYS": "0"})
