"""Plan validation, wave assignment and binding of earlier results into later steps.

The model proposes a plan; this code decides whether it may run: known tools, unique
ids, dependencies only on earlier or completed steps (so no cycles), placeholders only
for declared dependencies, and a size cap.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence

from services.common.llm import PlanStep, StepScope, ToolName
from services.router._types import Cell, Route, Status, StepRun

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_-]+)\s*\}\}")
_STEP_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_METADATA_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")

# What the router runs. SQL goes to the SQL service as a question (AskQuestion), which
# links it to the schema itself: the router builds no structured intents.
TOOLS: tuple[ToolName, ...] = (ToolName.SEMANTIC_SEARCH, ToolName.SQL_QUESTION)


class PlanInvalid(ValueError):
    """A proposed plan may not run; the message names the rule (metadata only)."""


def placeholders(text: str) -> set[str]:
    """Step ids referenced as ``{{sN}}``."""
    return set(_PLACEHOLDER.findall(text))


def validate(
    steps: Sequence[PlanStep],
    *,
    completed: Mapping[str, StepRun],
    max_steps: int,
    tools: Sequence[ToolName],
) -> None:
    """Raise PlanInvalid unless ``steps`` can run after the ``completed`` ones."""
    if not steps:
        raise PlanInvalid("empty plan")
    if len(steps) > max_steps:
        raise PlanInvalid(f"plan has {len(steps)} steps, the cap is {max_steps}")
    seen: set[str] = set()
    for step in steps:
        if not _STEP_ID.match(step.id):
            raise PlanInvalid("malformed step id")
        if step.id in seen:
            raise PlanInvalid(f"duplicate step id {step.id}")
        if step.tool not in tools:
            raise PlanInvalid(f"tool {step.tool} is not allowed")
        if not step.query.strip():
            raise PlanInvalid(f"{step.id}: empty query")
        for dependency in step.depends_on:
            # Only earlier steps of this plan or completed ones: forbids cycles outright.
            if dependency not in seen and dependency not in completed:
                raise PlanInvalid(f"{step.id} depends on unknown or later step {dependency}")
        if step.scope is not None:
            if step.tool is not ToolName.SEMANTIC_SEARCH:
                raise PlanInvalid(f"{step.id}: only semantic_search takes a scope")
            if step.scope.source not in step.depends_on:
                raise PlanInvalid(f"{step.id} is scoped by a step it does not depend on")
            keys = [k for k in (step.scope.field, step.scope.label_field) if k]
            if not keys or not all(_METADATA_KEY.match(k) for k in keys):
                raise PlanInvalid(f"{step.id}: malformed scope field")
        undeclared = placeholders(step.query) - set(step.depends_on)
        if undeclared:
            raise PlanInvalid(f"{step.id} binds a step it does not depend on")
        seen.add(step.id)


def assign_waves(steps: Sequence[PlanStep], *, offset: int = 0) -> dict[str, int]:
    """Zero-based wave per step: after every dependency in this plan, parallel otherwise."""
    waves: dict[str, int] = {}
    for step in steps:
        inner = [waves[d] for d in step.depends_on if d in waves]
        waves[step.id] = (max(inner) + 1) if inner else offset
    return waves


def bound_value(run: StepRun) -> str:
    """What ``{{sN}}`` stands for: the top SQL row's label, or the top hit's title."""
    if run.sql is not None and run.sql.rows:
        row = run.sql.rows[0]
        for value in row:
            if isinstance(value, str) and value.strip():
                return value
        return "" if row[0] is None else str(row[0])
    if run.hits:
        return run.hits[0].title or run.hits[0].text[:80]
    return ""


def scope_members(
    scope: StepScope, source: StepRun
) -> list[tuple[str, tuple[tuple[str, Cell], ...]]]:
    """(name, metadata filter) per entity of ``source``'s rows, in row order: the
    entity's ``scope.field`` value where the rows carry that column, else its name under
    ``scope.label_field``; rows with neither are left out."""
    if source.sql is None:
        return []
    columns = [c.lower() for c in source.sql.columns]
    at = columns.index(scope.field.lower()) if scope.field.lower() in columns else -1
    members: list[tuple[str, tuple[tuple[str, Cell], ...]]] = []
    seen: set[tuple[tuple[str, Cell], ...]] = set()
    for row in source.sql.rows:
        name = next((v for v in row if isinstance(v, str) and v.strip()), "")
        key: tuple[tuple[str, Cell], ...] = ()
        if 0 <= at < len(row) and row[at] is not None and not isinstance(row[at], bool):
            key = ((scope.field, row[at]),)
            name = name or f"{scope.field} {row[at]}"
        elif name and scope.label_field:
            key = ((scope.label_field, name),)
        if not key or key in seen:
            continue
        seen.add(key)
        members.append((name, key))
    return members


def bind(step: PlanStep, results: Mapping[str, StepRun]) -> PlanStep:
    """``step`` with every ``{{sN}}`` replaced by step sN's top result."""

    def substitute(text: str) -> str:
        return _PLACEHOLDER.sub(
            lambda m: bound_value(results[m.group(1)]) if m.group(1) in results else "",
            text,
        )

    return dataclasses.replace(step, query=" ".join(substitute(step.query).split()))


def rename(step: PlanStep, renames: Mapping[str, str]) -> PlanStep:
    """``step`` with ids (its own, its dependencies, its placeholders) renamed."""

    def substitute(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: "{{" + renames.get(m.group(1), m.group(1)) + "}}", text)

    scope = step.scope
    if scope is not None:
        scope = dataclasses.replace(scope, source=renames.get(scope.source, scope.source))
    return dataclasses.replace(
        step,
        id=renames.get(step.id, step.id),
        query=substitute(step.query),
        depends_on=tuple(renames.get(d, d) for d in step.depends_on),
        scope=scope,
    )


def answered_route(planned: Route, runs: Iterable[StepRun]) -> Route:
    """The route an AUTO answer took, from what the engines found rather than from the
    question's wording. A question that counts ("the number of", "how many") is planned
    for the SQL side first; when the SQL service could not link it to the schema (its
    step failed or returned no rows) and a search found passages in its stead (the
    replan's semantic step), the answer comes from the documents, slides or sheets
    and is reported on the documents' route, not on SQL's."""
    if planned is not Route.SQL:
        return planned
    done = list(runs)
    rows = any(
        r.tool is ToolName.SQL_QUESTION and r.sql is not None and r.sql.rows
        for r in done
        if r.status is Status.SUCCEEDED
    )
    found = any(
        r.tool is ToolName.SEMANTIC_SEARCH and r.hits for r in done if r.status is Status.SUCCEEDED
    )
    return Route.AGENTIC if found and not rows else planned
