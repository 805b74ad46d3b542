"""Recovering JSON from model replies, and validating it against the output type."""

from __future__ import annotations

import pytest

from services.common.llm import (
    Answer,
    FilterOp,
    IntentKind,
    JsonRepairError,
    Plan,
    RouteAction,
    RouteDecision,
    SchemaViolation,
    SqlUnderstanding,
    ToolName,
    decode,
    encode,
    extract_json,
    json_schema,
    parse_output,
)

REPAIRS: list[tuple[str, object]] = [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ("```\n[1, 2, 3]\n```", [1, 2, 3]),
    ('<think>weigh {options} first</think>{"a": 1}', {"a": 1}),
    ('<THINKING>\nlong\nreasoning\n</THINKING>\n\n```json\n{"a": [1, 2,]}\n```', {"a": [1, 2]}),
    ('reasoning without an opening tag</think>{"a": 1}', {"a": 1}),
    ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
    ('{"text": "keep, } this", "n": 2,}', {"text": "keep, } this", "n": 2}),
    ('Here you go: {"a": {"b": "c"}} — done.', {"a": {"b": "c"}}),
    ("{\u201ca\u201d: 1}", {"a": 1}),
    ('I considered [a] and {b}. Final: {"a": 1}', {"a": 1}),
    ('{"escaped": "say \\"hi\\", then {go}"}', {"escaped": 'say "hi", then {go}'}),
]


@pytest.mark.parametrize(("raw", "expected"), REPAIRS, ids=[r for r, _ in REPAIRS])
def test_extract_json_repairs(raw: str, expected: object) -> None:
    assert extract_json(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", "no json here", '{"a": 1', '<think>{"a": 1}</think>', "{'a': 1}"]
)
def test_extract_json_fails_loudly(raw: str) -> None:
    with pytest.raises(JsonRepairError):
        extract_json(raw)


def test_decode_builds_nested_typed_outputs() -> None:
    data = {
        "restatement": "Count deals in negotiation.",
        "intent": {
            "kind": "COUNT",
            "table": "opportunities",
            "filters": [{"column": "stage", "op": "eq", "value": "Negotiation"}],
            "limit": 5.0,
        },
        "unknown_extra_key": True,
    }
    result = decode(SqlUnderstanding, data)
    assert result.intent is not None
    assert result.intent.kind is IntentKind.COUNT
    assert result.intent.filters[0].op is FilterOp.EQ
    assert result.intent.limit == 5 and isinstance(result.intent.limit, int)
    assert result.confidence == 0.0


@pytest.mark.parametrize(("value", "expected"), [(True, True), (3, 3), (2.5, 2.5), ("x", "x")])
def test_union_values_keep_their_json_type(value: object, expected: object) -> None:
    data = {"kind": "list", "table": "t", "filters": [{"column": "c", "op": "eq", "value": value}]}
    understanding = decode(SqlUnderstanding, {"restatement": "r", "intent": data})
    assert understanding.intent is not None
    got = understanding.intent.filters[0].value
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"question_class": "semantic"}, "$.action"),
        ({"action": "maybe", "question_class": "semantic"}, "$.action"),
        (
            {"action": "retrieve", "question_class": "semantic", "confidence": "high"},
            "$.confidence",
        ),
        ({"action": "retrieve", "question_class": "semantic", "answer": None}, "$.answer"),
        (["not", "an", "object"], "$"),
    ],
)
def test_decode_names_the_violating_path(data: object, path: str) -> None:
    with pytest.raises(SchemaViolation) as caught:
        decode(RouteDecision, data)
    assert caught.value.path == path


def test_plan_steps_validate_tools() -> None:
    with pytest.raises(SchemaViolation, match=r"\$\.steps\[0\]\.tool"):
        parse_output(Plan, '{"steps": [{"id": "s1", "tool": "shell", "query": "q"}]}')
    plan = parse_output(Plan, '{"steps": [{"id": "s1", "tool": "sql_intent", "query": "q",}]}')
    assert plan.steps[0].tool is ToolName.SQL_INTENT and plan.steps[0].depends_on == ()


def test_schema_matches_the_dataclass() -> None:
    schema = json_schema(RouteDecision)
    assert schema["type"] == "object"
    assert schema["required"] == ["action", "question_class"]
    assert schema["properties"]["action"] == {"type": "string", "enum": ["retrieve", "respond"]}
    plan_schema = json_schema(Plan)
    step = plan_schema["properties"]["steps"]["items"]
    assert step["properties"]["intent"]["nullable"] is True
    value = step["properties"]["intent"]["properties"]["filters"]["items"]["properties"]["value"]
    assert value == {
        "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}]
    }
    # Callers may mutate what they get (the SDK does) without corrupting the cache.
    schema["properties"].clear()
    assert json_schema(RouteDecision)["properties"]


def test_encode_round_trips() -> None:
    answer = Answer((), supported=False)
    assert decode(Answer, encode(answer)) == answer
    decision = RouteDecision(
        RouteAction.RESPOND,
        decode(
            RouteDecision, {"action": "respond", "question_class": "conversational"}
        ).question_class,
    )
    assert decode(RouteDecision, encode(decision)) == decision
