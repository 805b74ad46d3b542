"""One SQL engine: only ``services/sql`` turns question text into SQL.

Two schema linkers drifted apart once (the router's planner linked questions itself and
answered differently from the SQL service). These checks read the source, so a second
linker or intent compiler anywhere else under ``services/`` fails the build instead of
slowly diverging again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SERVICES = Path(__file__).resolve().parents[2] / "services"
OWNER = "sql"  # the one package allowed to link schemas and build intents

# Building a structured intent (either layer's types) or compiling one into SQL.
INTENT_BUILDERS = frozenset(
    {
        "Intent",
        "SqlIntent",
        "IntentFilter",
        "IntentAggregate",
        "compile_intent",
        "compile_ratio",
        "intent_from_model",
    }
)
# Linking machinery by name, wherever it might be imported from.
LINKER_NAMES = frozenset(
    {"SchemaLinker", "QuestionLinker", "Vocabulary", "OfflineGenerator", "JoinGraph"}
)
# The SQL service's linking and intent modules: nobody else reads questions with them.
ENGINE_MODULES = frozenset(
    f"services.{OWNER}.{m}"
    for m in (
        "ask",
        "intents",
        "linker",
        "verify",
        "words",
        "definitions",
        "catalog",
    )
)


def _engine_module(module: str) -> bool:
    """One of the engine's modules, or a module inside one of its packages."""
    return any(module == m or module.startswith(m + ".") for m in ENGINE_MODULES)


# Only the SQL service writes SQL; fingerprinting a statement for telemetry writes none.
SQLGLOT_ALLOWED = frozenset({"common/_observability.py"})


def violations(root: Path) -> list[str]:
    """Every place under ``root`` (a ``services`` tree) outside ``root/sql`` that links
    schemas, builds or compiles intents, or writes SQL."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] == OWNER:
            continue
        where = relative.as_posix()
        if "linking" in path.stem or "linker" in path.stem:
            found.append(f"{where}: a linking module outside services/{OWNER}")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0)
            found.extend(f"{where}:{line}: {v}" for v in _node_violations(node, where))
    return found


def _node_violations(node: ast.AST, where: str) -> list[str]:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in INTENT_BUILDERS:
            return [f"calls {name}(): intents are built and compiled in services/{OWNER}"]
        return []
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if _engine_module(module):
            return [f"imports {module}: the SQL engine is used through services/{OWNER}'s RPCs"]
        if module.split(".")[0] == "sqlglot" and where not in SQLGLOT_ALLOWED:
            return [f"imports {module}: only services/{OWNER} writes SQL"]
        linkers = sorted(a.name for a in node.names if a.name in LINKER_NAMES)
        return [f"imports {n}: schema linking lives in services/{OWNER}" for n in linkers]
    if isinstance(node, ast.Import):
        found = []
        for alias in node.names:
            if _engine_module(alias.name):
                found.append(f"imports {alias.name}: the SQL engine is used through its RPCs")
            if alias.name.split(".")[0] == "sqlglot" and where not in SQLGLOT_ALLOWED:
                found.append(f"imports {alias.name}: only services/{OWNER} writes SQL")
        return found
    return []


def test_only_the_sql_service_links_questions_to_schemas() -> None:
    assert violations(SERVICES) == []


def linkers(root: Path) -> list[str]:
    """Every class under ``root`` that reads questions against a schema, by its name."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                part in node.name for part in ("Linker", "Lexicon", "Reader")
            ):
                found.append(f"{path.relative_to(root).as_posix()}:{node.name}")
    return found


def test_exactly_one_schema_linker() -> None:
    # one linker, one place: a second reader of questions (the old intent rules had a
    # lexicon and a reader of their own) would answer what the linker refuses
    assert linkers(SERVICES) == [f"{OWNER}/linker/_linker.py:QuestionLinker"]


def test_a_second_linker_is_found(tmp_path: Path) -> None:
    (tmp_path / OWNER).mkdir()
    (tmp_path / OWNER / "_linker.py").write_text("class QuestionLinker: ...\n")
    (tmp_path / OWNER / "_rules.py").write_text("class _Lexicon: ...\nclass _Reader: ...\n")
    assert linkers(tmp_path) == [
        f"{OWNER}/_linker.py:QuestionLinker",
        f"{OWNER}/_rules.py:_Lexicon",
        f"{OWNER}/_rules.py:_Reader",
    ]


def test_the_sql_service_is_where_intents_are_built() -> None:
    # The check is not vacuous: the owner package does what everyone else may not.
    owner = SERVICES / OWNER
    assert (owner / "intents" / "_intents.py").exists()
    assert (owner / "linker" / "_linker.py").exists()
    calls = {
        node.func.id
        for path in owner.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert {"Intent", "compile_intent"} <= calls


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (
            "router/_x.py",
            "from services.common.llm import SqlIntent\nSqlIntent(1, 't')\n",
            "SqlIntent()",
        ),
        ("router/_x.py", "import m\nm.IntentFilter('a', 'eq', 1)\n", "IntentFilter()"),
        (
            "common/llm/_x.py",
            "from services.sql.ask._offline import parse\n",
            "services.sql.ask._offline",
        ),
        ("common/llm/_x.py", "from services.foo import SchemaLinker\n", "SchemaLinker"),
        ("router/_x.py", "import services.sql.intents._intents\n", "services.sql.intents._intents"),
        ("router/_x.py", "from sqlglot import exp\n", "only services/sql writes SQL"),
        ("common/llm/_linking.py", "X = 1\n", "a linking module"),
    ],
    ids=["sql-intent", "intent-filter", "rules-import", "linker-name", "import", "sqlglot", "name"],
)
def test_a_second_linker_is_caught(tmp_path: Path, module: str, source: str, expected: str) -> None:
    (tmp_path / OWNER).mkdir()
    (tmp_path / OWNER / "_fine.py").write_text("Intent('t')\nimport sqlglot\n")
    target = tmp_path / module
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    found = violations(tmp_path)
    assert len(found) == 1 and expected in found[0], found
