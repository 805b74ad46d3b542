"""The routing eval scores where AUTO's offline planner sends each question first, by the
kind of dataset the question came from (databases → records, a corpus → documents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.bench.routing_eval import DOCUMENTS, RECORDS, main, route_dataset


def _dataset(root: Path, kind: str, questions: list[str]) -> Path:
    root.mkdir()
    (root / kind).mkdir()
    (root / "questions.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(questions))
    )
    return root


async def test_records_questions_are_scored_by_their_first_step(tmp_path: Path) -> None:
    folder = _dataset(
        tmp_path / "sql",
        "databases",
        ["How many customers are there in each state?", "Why do customers churn?"],
    )
    report = await route_dataset(folder)
    assert report.expected == RECORDS and report.questions == 2
    assert (report.to_records, report.to_documents) == (1, 1)
    assert report.misrouted == ("q1",) and report.rate == 0.5


async def test_document_questions_expect_the_documents(tmp_path: Path) -> None:
    folder = _dataset(
        tmp_path / "qa",
        "corpus",
        ["Summarize the security policy", "What are the top 5 deals? Why were they lost?"],
    )
    report = await route_dataset(folder)
    assert report.expected == DOCUMENTS and report.several_steps == 1
    assert report.misrouted == ("q1",)  # its first step asks the records


def test_the_report_holds_ids_and_tools_never_question_text(tmp_path: Path) -> None:
    folder = _dataset(tmp_path / "sql", "databases", ["How many secret projects are there?"])
    out = tmp_path / "routing.json"
    main([folder], out)
    text = out.read_text()
    assert "secret" not in text and json.loads(text)[0]["routed_as_expected"] == 1.0


def test_a_folder_of_neither_kind_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "odd").mkdir()
    with pytest.raises(SystemExit, match="neither databases/ nor corpus/"):
        main([tmp_path / "odd"], tmp_path / "out.json")
