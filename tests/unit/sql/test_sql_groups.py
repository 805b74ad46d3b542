"""The SQL package grouped by lifecycle, read from the import graph.

``services/sql`` holds one group per stage of a question's life (``catalog``, ``gate``,
``linker``, ``verify``, ``ask``, ``memory``, ``conversation``, ``results``, …) and the
service itself at its root (``_server``, ``_engine``, ``_convert``, ``_settings``). These
checks keep the tree saying where things live:

- a group's modules reach another group only through that group's face (its
  ``__init__``), never one of its private modules;
- no group imports the root's private modules (the service sits on top of the groups);
- the groups import each other without a cycle, so each face can be read, and changed,
  from the bottom up;
- nothing but packages and the root's own modules sits at the root.

Each rule is shown failing on a planted violation.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SQL = ROOT / "services" / "sql"
PREFIX = "services.sql."
# The service itself: the servicer, the engine it calls, protobuf conversion, settings,
# the engine's plain result types, the sql-check command and the entry point.
ROOT_MODULES = frozenset(
    {"__init__", "__main__", "_server", "_engine", "_convert", "_settings", "_results", "_check"}
)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an import names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def sql_imports(root: Path = SQL) -> dict[str, set[str]]:
    """Every module of the SQL package and the SQL-package modules it imports."""
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        module = _module(path)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(module, path, node)
                found |= {target, *(f"{target}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[module] = {t for t in found if t.startswith(PREFIX) or t == "services.sql"}
    return graph


def group(module: str) -> str:
    """The group a module belongs to (``catalog``), or ``""`` for the root."""
    rest = module.removeprefix(PREFIX).split(".")
    if module == "services.sql" or (len(rest) == 1 and (SQL / f"{rest[0]}.py").exists()):
        return ""
    return rest[0]


def past_faces(graph: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """(module, imported module) where a module reaches into another group past its face,
    or a group's module imports the root's private modules."""
    found = set()
    for module, targets in graph.items():
        mine = group(module)
        for target in targets:
            theirs = group(target)
            if theirs == mine:
                continue
            inner = target.removeprefix(PREFIX).split(".")[1:]
            if (theirs and any(p.startswith("_") for p in inner)) or (
                not theirs and mine and target != "services.sql"
            ):
                found.add((module, target))
    return found


def group_cycles(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """Pairs of groups that reach each other through their imports."""
    edges: dict[str, set[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = group(module), group(target)
            if a and b and a != b:
                edges.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return False

    return {frozenset({a, b}) for a, targets in edges.items() for b in targets if reaches(b, a)}


def loose_modules(names: Iterable[str]) -> set[str]:
    """Modules at the root that are not the service's own: each belongs in a group."""
    return set(names) - ROOT_MODULES


def _root_modules() -> set[str]:
    return {p.stem for p in SQL.glob("*.py")}


def test_groups_reach_each_other_only_through_their_faces() -> None:
    assert past_faces(sql_imports()) == set()


def test_groups_import_each_other_without_a_cycle() -> None:
    assert group_cycles(sql_imports()) == set()


def test_the_root_holds_only_the_service() -> None:
    assert loose_modules(_root_modules()) == set()


def test_every_group_has_a_face_that_says_what_it_holds() -> None:
    groups = [p for p in SQL.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert {g.name for g in groups} >= {
        "catalog",
        "gate",
        "linker",
        "verify",
        "ask",
        "memory",
        "conversation",
        "results",
    }
    for package in groups:
        face = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(face), f"{package.name}/__init__.py says nothing"


def test_each_rule_catches_a_planted_violation() -> None:
    graph = sql_imports()
    past = {**graph, "services.sql.linker._x": {"services.sql.catalog._catalog"}}
    assert ("services.sql.linker._x", "services.sql.catalog._catalog") in past_faces(past)
    up = {**graph, "services.sql.linker._x": {"services.sql._engine"}}
    assert ("services.sql.linker._x", "services.sql._engine") in past_faces(up)
    # through the face is fine, and so is a group's own private module
    fine = {"services.sql.linker._x": {"services.sql.catalog", "services.sql.linker._plan"}}
    assert past_faces(fine) == set()
    looped = {**graph, "services.sql.catalog._x": {"services.sql.memory"}}
    assert frozenset({"catalog", "memory"}) in group_cycles(looped)
    # a relative import is read too
    tree = ast.parse("from .._engine import SqlEngine\n")
    node = tree.body[0]
    assert isinstance(node, ast.ImportFrom)
    assert (
        _resolve("services.sql.linker._x", SQL / "linker" / "_x.py", node) == "services.sql._engine"
    )
    assert loose_modules({*_root_modules(), "_stray"}) == {"_stray"}
