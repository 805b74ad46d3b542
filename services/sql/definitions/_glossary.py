"""Business definitions: a database's glossary and a request's instructions.

A glossary entry is a term, its synonyms, and either a SQL expression ("CPC" ->
``SUM(cost) / NULLIF(SUM(clicks), 0)``) or a prose definition ("active means status =
'active'"). Entries come from a file per database (configuration, not code) and from the
``instructions`` a product backend sends with a question. Generators receive both as
data: a model gets them fenced in its prompt; the offline generator applies every one
it can parse and reports the rest as ignored.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GlossaryEntry:
    """One business definition. ``expression`` is SQL over the database's columns (may
    be empty); ``definition`` is prose (may be empty); ``source`` is ``glossary`` or
    ``instructions``."""

    term: str
    synonyms: tuple[str, ...] = ()
    expression: str = ""
    definition: str = ""
    source: str = "glossary"

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.synonyms)

    def text(self) -> str:
        """One line, as a model sees it."""
        body = self.expression or self.definition
        alias = f" (also: {', '.join(self.synonyms)})" if self.synonyms else ""
        return f"{self.term}{alias} = {body}"


@dataclass(frozen=True)
class JoinSpec:
    """A join a glossary file declares, as written: ``child`` columns hold values of
    ``parent`` columns (tables bare or schema-qualified). Resolved against the catalog
    when it loads; a name it does not hold is reported, never guessed."""

    child: str
    child_columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]

    def text(self) -> str:
        left = ", ".join(f"{self.child}.{c}" for c in self.child_columns)
        right = ", ".join(f"{self.parent}.{c}" for c in self.parent_columns)
        return f"{left} -> {right}"
