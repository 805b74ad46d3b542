"""The LLM layer holds providers only; what an engine does without a model is that engine's.

About 1,650 lines of the router's own logic (classification and planning rules, follow-up
resolution, grading, rewriting, extractive synthesis) once lived in ``services/common/llm``
and the router called them directly, so the "provider" layer planned and answered. These
checks read the source: a role implemented by rules, or a routing or synthesis function,
back in the LLM layer fails the build.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LLM = Path(__file__).resolve().parents[2] / "services" / "common" / "llm"

# Classes allowed to implement roles there: the models' providers (the roles on any model,
# ``ModelProvider``, and the wires under it) and the wrappers that add fallback and spans
# around any provider (they delegate; they decide nothing).
PROVIDERS = frozenset(
    {
        "ModelProvider",
        "GeminiProvider",
        "OpenAIProvider",
        "FallbackProvider",
        "ObservedProvider",
        "LlmProvider",
    }
)
# A role's method names: a class defining one implements the role.
ROLE_METHODS = frozenset(
    {"route", "plan", "replan", "grade", "rewrite", "synthesize", "resolve_follow_up"}
)
# The offline logic by what it does, wherever in the layer it might reappear.
LOGIC_FUNCTIONS = frozenset(
    {
        "classify",
        "classify_simple",
        "decompose",
        "search_query",
        "scoped_question",
        "grade",
        "rewrite",
        "synthesize",
        "resolve",
        "split_sentences",
        "pick_sentences",
    }
)
LOGIC_MODULES = frozenset(
    {"_rules", "_followup", "_extractive", "_deterministic", "_text", "_planner", "_synthesis"}
    # the follow-up reader's steps (``router/offline/_followup/``), one module a step
    | {"_resolve", "_structural", "_narrow", "_swap", "_reference", "_regroup", "_ordinal"}
)


def violations(root: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if path.stem in LOGIC_MODULES:
            found.append(f"{where}: an engine's offline logic module in the LLM layer")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name.lstrip("_") in LOGIC_FUNCTIONS
            ):
                found.append(f"{where}:{node.lineno}: {node.name}() is an engine's logic")
            if isinstance(node, ast.ClassDef) and node.name not in PROVIDERS:
                methods = {
                    n.name
                    for n in node.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                if methods & ROLE_METHODS:
                    found.append(
                        f"{where}:{node.lineno}: {node.name} implements roles "
                        f"({', '.join(sorted(methods & ROLE_METHODS))}) without a model"
                    )
    return found


def test_the_llm_layer_holds_providers_only() -> None:
    assert violations(LLM) == []


def test_the_router_holds_its_offline_logic() -> None:
    # Not vacuous: the logic exists, where it belongs.
    offline = LLM.parents[1] / "router" / "offline"
    names = {
        node.name
        for path in offline.rglob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }
    assert {"classify", "decompose", "grade", "rewrite", "synthesize", "resolve"} <= names
    assert "DeterministicProvider" in names


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("_rules.py", "X = 1\n", "offline logic module"),
        ("_helpers.py", "def classify(q):\n    return q\n", "classify()"),
        ("_helpers.py", "def _synthesize(q):\n    return q\n", "_synthesize()"),
        (
            "_offline.py",
            "class RulesProvider:\n    async def plan(self, r):\n        return r\n",
            "RulesProvider implements roles (plan)",
        ),
    ],
    ids=["module", "function", "private-function", "provider"],
)
def test_logic_back_in_the_layer_is_caught(
    tmp_path: Path, module: str, source: str, expected: str
) -> None:
    (tmp_path / "_gemini.py").write_text(
        "class GeminiProvider:\n    async def plan(self, r):\n        return r\n"
    )
    (tmp_path / module).write_text(source)
    found = violations(tmp_path)
    assert len(found) == 1 and expected in found[0], found
