"""What the engine returns besides an ask's result: a statement that ran, a database's
catalog as described. Plain types in their own module, so the converters and the engine
both use them without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

from services.sql.catalog import Catalog, Edge, RenderedCatalog
from services.sql.gate import ResultSet, Verdict


@dataclass(frozen=True)
class Executed:
    """A statement that ran: what the gate made of it, its rows, and what it means."""

    database: str
    verdict: Verdict
    result: ResultSet
    explanation: str = ""


@dataclass(frozen=True)
class Described:
    """A database's catalog as text (capped, maybe pruned) and as structured tables."""

    database: str
    catalog: Catalog
    rendered: RenderedCatalog
    # the joins between the described tables the service joins along
    joins: tuple[Edge, ...] = ()
