"""Glossary files (SQL_GLOSSARIES): a good file loads in order, every malformed one stops
start-up with a message naming the file and the entry, and the glossary reaches the
target configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.common import SettingsError
from services.sql import SqlSettings
from services.sql._server import target_configs
from services.sql._settings import parse_glossaries
from services.sql.definitions._file import load_glossary, load_glossary_file
from services.sql.definitions._glossary import GlossaryEntry, JoinSpec

GOOD = {
    "entries": [
        {
            "term": "CPC",
            "synonyms": ["cost per click"],
            "sql": "SUM(cost) / NULLIF(SUM(clicks), 0)",
        },
        {"term": "active", "definition": "status = 'active'"},
    ]
}


def _write(tmp_path: Path, content: Any, name: str = "g.json") -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_a_good_file_loads_every_entry_in_order(tmp_path):
    entries = load_glossary(_write(tmp_path, GOOD))
    assert entries == (
        GlossaryEntry("CPC", ("cost per click",), expression="SUM(cost) / NULLIF(SUM(clicks), 0)"),
        GlossaryEntry("active", definition="status = 'active'"),
    )
    assert entries[0].text() == "CPC (also: cost per click) = SUM(cost) / NULLIF(SUM(clicks), 0)"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "is not valid JSON"),
        ([], '"entries" list'),
        ({"entries": {}}, '"entries" list'),
        ({"entries": ["CPC"]}, "entries[0] must be an object"),
        ({"entries": [{"sql": "1"}]}, 'entries[0] needs a non-empty "term"'),
        ({"entries": [{"term": "  ", "sql": "1"}]}, 'entries[0] needs a non-empty "term"'),
        ({"entries": [{"term": "cpc"}]}, "entries[0] ('cpc') needs exactly one of"),
        (
            {"entries": [{"term": "cpc", "sql": "1", "definition": "one"}]},
            "entries[0] ('cpc') needs exactly one of",
        ),
        ({"entries": [{"term": "cpc", "sql": ""}]}, "needs exactly one of"),
        ({"entries": [{"term": "cpc", "sql": 1}]}, '"sql" must be a string'),
        ({"entries": [{"term": "cpc", "sql": "1", "synonyms": "x"}]}, '"synonyms" must be'),
        ({"entries": [{"term": "cpc", "sq1": "1"}]}, "unknown keys ['sq1']"),
        (
            {"entries": [{"term": "a", "sql": "1"}, {"term": "b", "synonyms": ["A"], "sql": "2"}]},
            "entries[1] ('b') repeats the name 'A' of entries[0]",
        ),
    ],
)
def test_a_malformed_file_names_the_file_and_the_entry(tmp_path, content, expected):
    path = _write(tmp_path, content)
    with pytest.raises(SettingsError) as err:
        load_glossary(path)
    assert str(path) in str(err.value) and "SQL_GLOSSARIES" in str(err.value)
    assert expected in str(err.value)


def test_a_missing_file_names_it(tmp_path):
    with pytest.raises(SettingsError, match=r"cannot read .*absent\.json"):
        load_glossary(tmp_path / "absent.json")


def test_glossaries_attach_to_their_targets(tmp_path):
    path = _write(tmp_path, GOOD)
    settings = SqlSettings.from_env(
        {"SQL_DATABASES": "ads=postgresql://r@h/ads", "SQL_GLOSSARIES": f"ads={path}"}
    )
    configs = {c.name: c for c in target_configs(settings, "postgresql://embedded/w")}
    assert [e.term for e in configs["ads"].glossary] == ["CPC", "active"]
    assert configs["warehouse"].glossary == ()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ads", "name=path"),
        ("ads=", "name=path"),
        ("Bad Name=/x", "SQL_GLOSSARIES"),
        ("ads=/a;ads=/b", "twice"),
    ],
)
def test_the_variable_is_parsed_like_sql_databases(raw, expected):
    with pytest.raises(SettingsError, match=expected):
        parse_glossaries(raw)


def test_a_glossary_for_an_unknown_database_is_refused(tmp_path):
    path = _write(tmp_path, GOOD)
    with pytest.raises(SettingsError, match="'sales', which is not a configured database"):
        SqlSettings.from_env({"SQL_GLOSSARIES": f"sales={path}"})
    assert parse_glossaries(f"a={path}; b = {path}") == (("a", path), ("b", path))


JOINS = {
    "entries": [],
    "joins": [
        {"from": "orders.customer_ref", "to": "public.customers.id"},
        {"from": ["lines.order_no", "lines.shop"], "to": ["orders.no", "orders.shop"]},
    ],
}


def test_joins_load_and_reach_their_targets(tmp_path):
    path = _write(tmp_path, JOINS)
    assert load_glossary_file(path).joins == (
        JoinSpec("orders", ("customer_ref",), "public.customers", ("id",)),
        JoinSpec("lines", ("order_no", "shop"), "orders", ("no", "shop")),
    )
    settings = SqlSettings.from_env(
        {"SQL_DATABASES": "ads=postgresql://r@h/ads", "SQL_GLOSSARIES": f"ads={path}"}
    )
    configs = {c.name: c for c in target_configs(settings, "postgresql://embedded/w")}
    assert len(configs["ads"].joins) == 2 and configs["warehouse"].joins == ()


@pytest.mark.parametrize(
    ("joins", "expected"),
    [
        ({}, '"joins" must be a list'),
        ([{"from": "a.b"}], 'joins[0] must be an object with exactly "from" and "to"'),
        ([{"from": "a.b", "to": "c.d", "on": 1}], 'exactly "from" and "to"'),
        ([{"from": "ab", "to": "c.d"}], "joins[0].from: 'ab' is not table.column"),
        ([{"from": "a.b", "to": ["c.d", "e.f"]}], "joins[0].to names columns of more than one"),
        ([{"from": ["a.b", "a.c"], "to": "c.d"}], "different numbers of columns"),
        ([{"from": "a.b", "to": "a.c"}], "joins[0] joins a to itself"),
        ([{"from": [], "to": "a.c"}], "a list of 1 to 8"),
    ],
)
def test_a_malformed_join_names_the_file_and_the_join(tmp_path, joins, expected):
    path = _write(tmp_path, {"entries": [], "joins": joins})
    with pytest.raises(SettingsError) as err:
        load_glossary_file(path)
    assert str(path) in str(err.value) and expected in str(err.value)
