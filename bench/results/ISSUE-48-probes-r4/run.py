"""Runs the ISSUE-48 round-4 probe set through the documents eval (as ../ISSUE-48-probes does).

The set is smaller than the dev set's floors (``check_devset`` wants 48 questions and
every format), so this skips those two checks and keeps every other one; scoring,
stack and rendering are ``services.bench.documents_eval``'s own. Adds a per-document
breakdown (each document exercises one of the held-back fixes).

    .venv/bin/python bench/results/ISSUE-48-probes-r4/run.py OUT.json
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from services.bench import documents_eval as de

ROOT = Path(__file__).parent


def main(out: Path) -> None:
    devset = de.read_devset(ROOT)
    problems = [p for p in de.check_devset(devset) if "fewer than" not in p]
    if problems:
        raise SystemExit("not a well-formed probe set: " + "; ".join(problems))
    report = asyncio.run(de.evaluate(devset, ["retrieve"]))
    records = report["records"]["retrieve"]
    by_id = {q.id: q for q in devset.questions}
    per_doc = {}
    for doc in sorted({q.document for q in devset.questions}):
        chosen = [r for r in records if by_id[r["id"]].document == doc]
        per_doc[doc] = de.summarise([by_id[r["id"]] for r in chosen], chosen)
    report["documents_breakdown"] = per_doc
    print(de.render(report))
    for doc, s in per_doc.items():
        print(
            f"{doc:<13} n {s['questions']} contains {s['correct']} locator "
            f"{s['right_locator']} refused {s['refused']} words {s['median_words']}"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
