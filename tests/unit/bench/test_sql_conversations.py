"""The conversation eval's scripts and scoring: both dev sets have scripted conversations
of every follow-up kind with gold SQL and a spelled-out question; a malformed script is
refused naming the turn; the targets read the way the issue states them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.bench.sql_conversations import (
    KINDS,
    load_conversations,
    missed_targets,
    render,
    script_for,
    scripts_for,
    summarise,
)
from services.sql import ranking_cut


@pytest.mark.parametrize(("folder", "least"), [("sql", 7), ("sql-spider", 8)])
def test_each_dev_set_has_conversations_of_every_kind(folder: str, least: int) -> None:
    dataset, conversations = load_conversations(script_for(Path(folder)))
    assert dataset == folder
    kinds = [t.kind for c in conversations for t in c.turns[1:]]
    assert {k: kinds.count(k) >= least for k in KINDS} == dict.fromkeys(KINDS, True)
    for conversation in conversations:
        for turn in conversation.turns[1:]:
            assert turn.spelled_out and turn.gold_sql.strip(), conversation.id


@pytest.mark.parametrize(
    ("turn", "problem"),
    [
        ({"question": "q", "kind": "value_swap", "gold_sql": "SELECT 1"}, "no spelled_out"),
        ({"question": "q", "kind": "ordinal", "spelled_out": "s", "gold_sql": "x"}, "'ordinal'"),
    ],
)
def test_a_malformed_turn_is_refused_naming_it(
    tmp_path: Path, turn: dict[str, str], problem: str
) -> None:
    first = {"question": "How many?", "kind": "standalone", "gold_sql": "SELECT 1"}
    script = tmp_path / "c.json"
    script.write_text(json.dumps(
        {"dataset": "sql", "conversations": [{"id": "c1", "db": "d", "turns": [first, turn]}]}
    ))  # fmt: skip
    with pytest.raises(ValueError, match=rf"c1 turn 2: .*{problem}"):
        load_conversations(script)


def _item(
    kind: str, correct: bool, alone: bool, same: bool, *, db: str = "d", key: str = "c#2"
) -> dict[str, object]:
    return {
        "id": key, "db": db, "kind": kind, "resolved_kind": "FOLLOW_UP_KIND_VALUE_SWAP",
        "route": "ROUTE_SQL", "outcome": "ANSWER_OUTCOME_ANSWERED", "answered": True,
        "correct": correct, "alone": {"correct": alone}, "alone_rows": True, "same_rows": same,
    }  # fmt: skip


def test_targets_compare_follow_ups_with_the_same_questions_spelled_out() -> None:
    good = [_item(k, True, True, True) for k in KINDS] * 3
    assert missed_targets(summarise(good)) == []
    drifted = [_item(k, True, False, False) for k in KINDS] * 3
    assert missed_targets(summarise(drifted)) == ["same rows"]
    worse = [_item(k, False, True, False) for k in KINDS] * 3
    assert "accuracy ratio" in missed_targets(summarise(worse))
    unrecognised = [dict(i, resolved_kind="FOLLOW_UP_KIND_STANDALONE") for i in good]
    assert "limit recognised" in missed_targets(summarise(unrecognised))


def test_rows_that_differ_though_both_are_right_are_counted_apart() -> None:
    shown_otherwise = [_item(k, True, True, False) for k in KINDS]
    wrong_alone = [_item(k, True, False, False) for k in KINDS]
    report = summarise([*shown_otherwise, *wrong_alone])
    assert report["overall"]["same_rows"] == 0
    assert report["overall"]["other_columns_both_right"] == len(KINDS)
    assert "same rows" in missed_targets(report)  # still a miss: only told apart


def test_a_wrong_kind_misses_the_precision_target() -> None:
    good = [_item(k, True, True, True) for k in KINDS] * 5
    wrong_limits = [dict(i, correct=False) if i["kind"] == "limit" else i for i in good]
    assert "limit precision" in missed_targets(summarise(wrong_limits))


def test_blind_turns_are_counted_per_kind_and_never_listed() -> None:
    study = [_item(k, False, True, False, db="study_db", key=f"s-{k}#2") for k in KINDS]
    blind = [_item(k, True, True, True, db="blind_db", key=f"b-{k}#2") for k in KINDS]
    report = summarise([*study, *blind], frozenset({"blind_db"}))
    assert {i["db"] for i in report["items"]} == {"study_db"}
    assert report["halves"]["blind"]["overall"]["correct"] == len(KINDS)
    assert report["halves"]["study"]["overall"]["correct"] == 0
    assert report["halves"]["blind"]["by_kind"]["limit"]["follow_ups"] == 1
    assert report["overall"]["follow_ups"] == 2 * len(KINDS)
    table = render(dict(report, conversations=0, first_turns={"questions": 0, "correct": 0}),
                   "t")  # fmt: skip
    assert "s-limit#2" in table and "b-" not in table and "blind half" in table


def test_later_scripts_of_a_dev_set_are_run_after_the_first() -> None:
    scripts = scripts_for(Path("sql-spider"))
    assert scripts[0] == script_for(Path("sql-spider"))
    assert [p.stem for p in scripts[1:]] == [
        "conversations_spider_blind",
        "conversations_spider_v2",
        "conversations_spider_v3",
        "conversations_spider_v4",
        "conversations_spider_v5",
        "conversations_spider_v6",
        "conversations_spider_v7",
        "conversations_spider_v8",
    ]
    assert [p.stem for p in scripts_for(Path("sql"))] == [
        "conversations_defog",
        "conversations_defog_v2",
        "conversations_defog_v3",
        "conversations_defog_v4",
        "conversations_defog_v5",
        "conversations_defog_v6",
        "conversations_defog_v7",
        "conversations_defog_v8",
    ]
    # a dev set named after its folder: its study script, then its blind one
    assert [p.stem for p in scripts_for(Path("sql-unseen"))] == [
        "conversations_sql-unseen",
        "conversations_sql-unseen_blind",
        "conversations_sql-unseen_v2",
        "conversations_sql-unseen_v3",
        "conversations_sql-unseen_v4",
        "conversations_sql-unseen_v5",
        "conversations_sql-unseen_v6",
        "conversations_sql-unseen_v7",
        "conversations_sql-unseen_v8",
        "conversations_sql-unseen_v9",
    ]


def test_a_ranking_cut_by_a_limit_is_checked_on_its_sort_keys() -> None:
    keyed = ranking_cut(
        "SELECT name, SUM(x) AS total FROM t GROUP BY name ORDER BY total DESC LIMIT 3"
    )
    assert keyed is not None
    sql, cut, width = keyed
    assert (cut, width) == (3, 1)
    assert "LIMIT" not in sql and "SUM(x) AS tandem_key_0" in sql
    assert ranking_cut("SELECT name FROM t ORDER BY name") is None
    assert ranking_cut("SELECT name FROM t LIMIT 3") is None


def test_every_script_of_each_dev_set_loads_with_every_kind() -> None:
    # a later script may be weighted to the kinds that miss (defog v3: limits and result
    # references); the dev set's scripts together still cover every kind
    for folder in ("sql", "sql-spider", "sql-unseen"):
        covered: set[str] = set()
        for script in scripts_for(Path(folder)):
            _, conversations = load_conversations(script)
            kinds = {t.kind for c in conversations for t in c.turns[1:]}
            assert kinds and kinds <= set(KINDS), script
            covered |= kinds
        assert covered == set(KINDS), folder


def test_errors_inherited_from_a_wrong_answer_are_told_apart():
    own = _item("limit", True, True, True) | {"previous_correct": True}
    inherited = _item("limit", False, False, False) | {"previous_correct": False}
    row = summarise([own, inherited])["by_kind"]["limit"]
    assert (row["precision"], row["precision_after_right"]) == (0.5, 1.0)
