"""Places read as codes: the interpretation says which place a question named in full
was read as the standard code its column stores ("Read 'Texas' as customers.state 'TX'
(ISO 3166-2 code of US)"), so a reader sees the assumption the catalog made (see
``services.sql.catalog.place_names``)."""

from __future__ import annotations

import re

from services.sql.catalog import compared_columns
from services.sql.linker._vocabulary import Vocabulary


def places_read(vocab: Vocabulary, question: str, sql: str) -> str:
    """The places of ``question`` the statement compares as their code, in words ("" when
    none): a name said in the question whose code the statement compares with the very
    column that stores it."""
    if not vocab.places:
        return ""
    low = " ".join(question.lower().split())
    compared: dict[str, list[tuple[str, str]]] | None = None
    said: list[str] = []
    for name, places in vocab.places.items():
        if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", low):
            continue
        if compared is None:
            found = compared_columns(sql, vocab.catalog)
            compared = {v: [(t.qualified, c) for t, c in cols] for v, cols in found.items()}
        for col, code, system in places:
            if col.key in compared.get(code.lower(), []):
                said.append(
                    f"{name.title()!r} as {col.table.name}.{col.column.name} {code!r} "
                    f"({system.describe()})"
                )
    return f"Read {'; '.join(said)}." if said else ""
