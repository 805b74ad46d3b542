"""Refusals that mislead: ``tandem eval refusals``.

The text-to-SQL dev sets are asked of the real SQL service as ``tandem eval sql`` asks
them (databases loaded as a user restores them, the embedding service beside it unless
``--no-meanings``), and every refusal is checked for the one thing a refusal must never
do: say that a name is absent when a table or column of that name exists ("nothing in the
schema matches 'quantity'" with ``orders.quantity`` there). The target is 0.

A refusal *claims absence* of a phrase when it says "nothing in the schema matches X",
"nothing read X", "X (no table, column or stored value is near it)" or that the question
"names no column or table"; the claim is *false* when a word of X, or two adjacent words
written as one, is (less a plural ending) a table or column name or a part of one between
``_`` or camelCase boundaries (``cars_data`` has "car" and "data"). The check is plainer
than the SQL service's own reading of words, so it cannot agree with it by construction.

Only the study half of a dataset that names halves is asked (its README's rule: the blind
half is for totals of the accuracy eval); question text stays in this process and the
report, never in telemetry.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import psycopg

from services.bench.reserve import reserved
from services.bench.sql_dataset import (
    DATABASE_PREFIX,
    Dataset,
    LoadOptions,
    database_names,
    evaluate,
    load_dataset,
    load_halves,
    only_half,
)
from services.common import embedded_server_url
from services.sql import SqlSettings, database_url

DEFAULT_OUT = Path("bench-results/eval-refusals.json")
_CLAIMS = (
    re.compile(r"nothing in the schema matches (['\"])(?P<phrase>.*?)\1(?=$|[;,.])"),
    re.compile(r"nothing read (['\"])(?P<phrase>.*?)\1(?=$|[;,.])"),
    re.compile(r"'(?P<phrase>[^']*)' \(no table, column or stored value is near it\)"),
)
_NAMES_NOTHING = "names no column or table"
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_COLUMNS_SQL = """
SELECT table_name, column_name FROM information_schema.columns
WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
"""


def absence_claims(reason: str, question: str) -> list[str]:
    """The phrases a refusal says nothing in the schema matches."""
    found = [m.group("phrase") for pattern in _CLAIMS for m in pattern.finditer(reason)]
    if _NAMES_NOTHING in reason:
        found.append(question)
    return found


def _singular(word: str) -> str:
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def name_keys(names: Iterable[str]) -> dict[str, str]:
    """Each table or column name's parts and the name written as one run, singular,
    and the name they belong to ("car" → cars_data, "fullname" → car_makers.fullname)."""
    keys: dict[str, str] = {}
    for label in names:
        name = label.rsplit(".", 1)[-1]
        parts = [p.lower() for piece in re.split(r"[_\W]+", name) for p in _PARTS.findall(piece)]
        for key in (*parts, "".join(parts)):
            if key:
                keys.setdefault(_singular(key), label)
    return keys


def false_absences(reason: str, question: str, keys: dict[str, str]) -> list[str]:
    """What a refusal calls absent although the schema has it ("'quantity' names
    orders.quantity"); empty for an honest refusal."""
    found: list[str] = []
    for phrase in absence_claims(reason, question):
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", phrase)]
        said = [*words, *(a + b for a, b in itertools.pairwise(words))]
        found += [f"{phrase!r} names {keys[_singular(w)]}" for w in said if _singular(w) in keys]
    return list(dict.fromkeys(found))


async def schema_names(admin_url: str, dataset: Dataset) -> dict[str, list[str]]:
    """Every table and column name of each loaded database (``table``, ``table.column``)."""
    names: dict[str, list[str]] = {}
    for db in dataset.databases:
        url = database_url(admin_url, DATABASE_PREFIX + db)
        async with await psycopg.AsyncConnection.connect(url) as conn:
            rows = await (await conn.execute(_COLUMNS_SQL)).fetchall()
        names[db] = sorted({t for t, _ in rows} | {f"{t}.{c}" for t, c in rows})
    return names


def check(
    items: Sequence[dict[str, Any]], questions: dict[str, str], names: dict[str, list[str]]
) -> dict[str, Any]:
    """One dataset's refusals: how many, how many say a phrase names nothing, and each
    that calls an existing name absent."""
    keys = {db: name_keys(found) for db, found in names.items()}
    refused = [i for i in items if i["outcome"] != "ANSWERED"]
    claiming = [i for i in refused if absence_claims(i["message"], questions[i["id"]])]
    false = [
        {"id": i["id"], "message": i["message"], "false": found}
        for i in claiming
        if (found := false_absences(i["message"], questions[i["id"]], keys[i["db"]]))
    ]
    return {
        "questions": len(items),
        "answered": len(items) - len(refused),
        "correct": sum(1 for i in items if i["correct"]),
        "refused": len(refused),
        "claiming_absence": len(claiming),
        "false_absences": len(false),
        "false": false,
        "refusals": [{"id": i["id"], "message": i["message"]} for i in refused],
    }


def render(reports: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| dataset | questions | answered | correct | refused | saying a phrase names nothing "
        "| calling an existing name absent |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in reports.items():
        lines.append(
            f"| {name} | {r['questions']} | {r['answered']} | {r['correct']} | {r['refused']} "
            f"| {r['claiming_absence']} | {r['false_absences']} |"
        )
    return "\n".join(lines)


async def _one(folder: Path, admin_url: str, embedding_addr: str | None) -> dict[str, Any]:
    dataset = load_dataset(folder)
    if load_halves(folder):
        dataset = only_half(dataset, "study")
    # held past the eval, while the loaded databases' names are read
    async with reserved(admin_url, database_names(dataset, LoadOptions())):
        report = await evaluate(dataset, admin_url=admin_url, embedding_addr=embedding_addr)
        names = await schema_names(admin_url, dataset)
    return check(report["items"], {q.id: q.question for q in dataset.questions}, names)


def main(folders: Sequence[Path], out: Path = DEFAULT_OUT, *, meanings: bool = True) -> int:
    """Print the table, write the JSON; exit status 1 when any refusal calls an existing
    name absent."""
    from services.bench._embedding import start_embedding  # noqa: PLC0415

    settings = SqlSettings.from_env()
    admin = settings.admin_url or embedded_server_url(settings.data_dir, "postgres")
    embedding = start_embedding() if meanings else None
    reports: dict[str, dict[str, Any]] = {}
    try:
        address = embedding.address if embedding is not None else None
        for folder in folders:
            name = folder.name + (" (study)" if load_halves(folder) else "")
            reports[name] = asyncio.run(_one(folder, admin, address))
    finally:
        if embedding is not None:
            embedding.stop()
    print(render(reports))
    for name, report in reports.items():
        for item in report["false"]:
            print(f"  {name} {item['id']}: {'; '.join(item['false'])}", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meanings": meanings, "datasets": reports}, indent=2))
    print(f"\nwrote {out}", file=sys.stderr)
    return 1 if any(r["false_absences"] for r in reports.values()) else 0
