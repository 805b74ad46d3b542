"""The architecture, read from the import graph, kept from getting worse.

- No module imports another package's private module (``services.x._y``, ``gateway._y``)
  except through that package's public face (its ``__init__`` or a public module);
  relative imports count, resolved against the importing module's package.
- No harness that starts a service's servers lives inside another service's package, and
  inside its own package only its ``_server`` and ``__main__`` start it (build its deps,
  create or serve its server): evals and benchmarks live under ``services/bench``.
- No import cycle between packages, nor between modules (a module importing its own
  package's face aside).
- No module takes a sibling module's private name (``from ._words import _plain`` beside
  ``_words``, or ``words._plain`` of ``from . import _words as words``): a helper two
  modules of a package share gets a public name in the module that owns it, so what is
  shared is said where it is written.

Each rule holds today except for the debts listed here (issue 37 moves them out); a new
violation fails with its place, and a listed debt that is gone fails too, so the lists
only shrink. Every rule is shown failing on a planted violation.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVICE_PACKAGES = frozenset(
    {"gateway", "services.embedding", "services.retrieval", "services.router", "services.sql"}
)

# (importing package, imported private module): none left; a new one fails the build.
PRIVATE_IMPORT_DEBT: frozenset[tuple[str, str]] = frozenset()
# (module inside a service package, other service package it starts): harnesses to move
# under services/bench.
HARNESS_DEBT: frozenset[tuple[str, str]] = frozenset()
# Package cycles: none left (the CLI sits on top; tools below it never import it).
CYCLE_DEBT: frozenset[frozenset[str]] = frozenset()


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "services" else parts[0]


def _modules(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in ("services", "gateway"):
        for path in (root / top).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _absolute(node: ast.ImportFrom, name: str, path: Path) -> str | None:
    """The module ``from … import`` names, relative imports resolved against the
    importing module's package (``from ..sql._engine import X`` in ``services.router._y``
    is ``services.sql._engine``); None when it climbs above the top package."""
    if node.level == 0:
        return node.module
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if node.level - 1 >= len(package):
        return None
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Every project module and the project modules it imports (anywhere in it), whether
    the import is absolute or relative."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = _absolute(node, name, path)
                if module is None:
                    continue
                targets = [module, *(f"{module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found |= {t for t in targets if t in modules}
        graph[name] = found
    return graph


def private_imports(graph: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """(importing package, imported module) for each import of another package's
    private module."""
    found = set()
    for module, targets in graph.items():
        for target in targets:
            if _package(target) == _package(module):
                continue
            if any(p.startswith("_") for p in target.split(".")):
                found.add((_package(module), target))
    return found


def harnesses(graph: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """(module of a service package, other service package it imports): a service's code
    talks to another only over gRPC, so such an import starts its servers."""
    return {
        (module, _package(target))
        for module, targets in graph.items()
        if _package(module) in SERVICE_PACKAGES
        for target in targets
        if _package(target) in SERVICE_PACKAGES and _package(target) != _package(module)
    }


# What starting a service looks like: building its dependencies, creating its server,
# serving it.
_STARTERS = frozenset({"build_deps", "create_server", "serve", "run_service"})


def _calls(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def server_starters(sources: Mapping[str, str]) -> set[str]:
    """Modules of a service package, other than its ``_server`` and ``__main__``, that
    start a service: a harness living where the service's own code does."""
    return {
        module
        for module, text in sources.items()
        if _package(module) in SERVICE_PACKAGES
        and module.rsplit(".", 1)[-1] not in {"_server", "__main__"}
        and _calls(ast.parse(text)) & _STARTERS
    }


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _sibling(modules: Mapping[str, Path], parent: str, module: str | None) -> bool:
    """Whether ``module`` is a module (not a package's face) of the package ``parent``."""
    return (
        module is not None
        and module in modules
        and modules[module].name != "__init__.py"
        and module.rsplit(".", 1)[0] == parent
    )


def sibling_private_names(root: Path = ROOT) -> set[tuple[str, str, str]]:
    """(importing module, sibling module, name) for each underscore name (no dunder) a
    module takes from another module of its own package (not the package's face):
    imported by name, or read off the sibling module imported whole
    (``from services.cli import _plumbing as client`` … ``client._stub``)."""
    modules = _modules(root)
    found = set()
    for name, path in modules.items():
        if path.name == "__init__.py":
            continue
        parent = name.rsplit(".", 1)[0]

        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = _absolute(node, name, path)
            for a in node.names:
                if _sibling(modules, parent, module) and _private(a.name):
                    found.add((name, str(module), a.name))
                elif module is not None and _sibling(modules, parent, f"{module}.{a.name}"):
                    aliases[a.asname or a.name] = f"{module}.{a.name}"
        found |= {
            (name, aliases[node.value.id], node.attr)
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
        }
    return found


def _sources(root: Path = ROOT) -> dict[str, str]:
    return {name: path.read_text(encoding="utf-8") for name, path in _modules(root).items()}


def package_cycles(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """Pairs of packages that import each other, directly or through others."""
    edges: dict[str, set[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            if _package(target) != _package(module):
                edges.setdefault(_package(module), set()).add(_package(target))

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

    return {
        frozenset({a, b})
        for a, targets in edges.items()
        for b in targets
        if a != b and reaches(b, a) and b in edges.get(a, set())
    }


def module_cycles(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """Groups of modules that import each other (strongly connected components of two or
    more), not counting a module importing its own package's face."""
    edges = {m: {t for t in targets if not m.startswith(f"{t}.")} for m, targets in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.add(frozenset(group))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def _check(found: set[Any], debt: frozenset[Any], what: str) -> None:
    new, gone = found - debt, debt - found
    assert not new, f"new {what}: {sorted(map(str, new))}"
    assert not gone, f"{what} no longer there, drop from the list: {sorted(map(str, gone))}"


def test_no_private_module_of_another_package_is_imported():
    _check(private_imports(imports()), PRIVATE_IMPORT_DEBT, "private imports across packages")


def test_no_harness_inside_a_service_package():
    _check(harnesses(imports()), HARNESS_DEBT, "harnesses inside service packages")


def test_no_service_package_starts_its_own_servers_outside_its_server_module():
    _check(server_starters(_sources()), frozenset(), "harnesses inside service packages")


def test_no_import_cycle_between_packages():
    _check(package_cycles(imports()), CYCLE_DEBT, "package cycles")


def test_no_import_cycle_between_modules():
    _check(module_cycles(imports()), frozenset(), "module cycles")


def test_no_module_imports_a_sibling_modules_private_name():
    _check(sibling_private_names(), frozenset(), "private names imported from a sibling module")


def _plant(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_relative_imports_are_read_against_the_importing_package(tmp_path: Path):
    # A tree on disk, read the way the rules read the real one: every relative form
    # resolves to the module it names, from a module and from a package's face.
    _plant(
        tmp_path,
        {
            "gateway/__init__.py": "",
            "services/__init__.py": "",
            "services/sql/__init__.py": "from ._engine import Engine\n",
            "services/sql/_engine.py": "Engine = object\n",
            "services/router/__init__.py": "from . import _planted\n",
            "services/router/_planted.py": (
                "from ..sql._engine import Engine\nfrom ..sql import _engine\n"
                "from .. import sql\nfrom .... import too_far\n"
            ),
        },
    )
    graph = imports(tmp_path)
    # ``from .. import sql`` names the package and the module, as its absolute form does.
    assert graph["services.router._planted"] == {
        "services.sql._engine",
        "services.sql",
        "services",
    }
    assert graph["services.router"] == {"services.router", "services.router._planted"}
    assert graph["services.sql"] == {"services.sql._engine"}
    assert ("services.router", "services.sql._engine") in private_imports(graph)
    assert ("services.router._planted", "services.sql") in harnesses(graph)


def test_each_rule_catches_a_planted_violation(tmp_path: Path):
    # Planted as a file and read from disk: a relative import of another package's
    # private module inside the router.
    empty = ("gateway", "services", "services/sql", "services/router")
    _plant(tmp_path, {f"{package}/__init__.py": "" for package in empty})
    _plant(
        tmp_path,
        {
            "services/sql/_engine.py": "Engine = object\n",
            "services/router/_planted.py": "from ..sql._engine import Engine\n",
        },
    )
    relative = imports(tmp_path)
    assert ("services.router", "services.sql._engine") in private_imports(relative)
    assert ("services.router._planted", "services.sql") in harnesses(relative)
    graph = imports()
    planted = {**graph, "services.router._planted": {"services.sql._engine"}}
    assert ("services.router", "services.sql._engine") in private_imports(planted)
    assert ("services.router._planted", "services.sql") in harnesses(planted)
    harness = (
        "from services.sql import build_deps\n\nasync def main():\n    await build_deps(s, t)\n"
    )
    assert server_starters({**_sources(), "services.sql.eval": harness}) == {"services.sql.eval"}
    cycle = {**graph, "services.common._planted": {"services.router"}}
    assert frozenset({"services.common", "services.router"}) in package_cycles(cycle)
    looped = {**graph, "services.cli._plumbing": {*graph["services.cli._plumbing"],
                                                  "services.cli._client"}}  # fmt: skip
    assert any(
        {"services.cli._plumbing", "services.cli._client"} <= c for c in module_cycles(looped)
    )
    # A sibling's private name, absolute or relative; its public name, the package's
    # face and another package's module are no sibling's private name.
    _plant(
        tmp_path,
        {
            "services/router/_words.py": "_plain = _clean = str\nplain = str\n",
            "services/router/_reads.py": (
                "from ._words import _plain, plain\n"
                "from services.router._words import _plain as again\n"
                "from services.router import _words\nfrom . import _words as words\n"
                "from ..sql._engine import Engine\nwords._clean(_words.plain(Engine._x))\n"
            ),
        },
    )
    assert sibling_private_names(tmp_path) == {
        ("services.router._reads", "services.router._words", "_plain"),
        ("services.router._reads", "services.router._words", "_clean"),
    }
    # The public face is allowed: the same import through ``services.sql`` is no debt.
    assert not private_imports({"services.router._x": {"services.sql"}})
