"""A "<name> number" the question asks about ("flight numbers") is the column of that
name where a table the statement reads stores one (``flights.flight``): the number a
row is known by, not the table's key nor another column that happens to end in "num".
The linker read "Which flight numbers did DL fly?" as ``flight_id, tailnum`` and "List
the flight numbers of flights" as a count; both are refused naming the column."""

from __future__ import annotations

import re

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._facts import StatementFacts
from services.sql.words import stem

_NUMBERED = re.compile(r"\b([a-z]{3,})\s+(?:number|numbers|no\.|nos\.)(?!\s+of\b)")


def check_named_number(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """Refuse when the question says "<name> number" of rows whose table holds a
    column called <name> (not its key) and the statement never reads that column."""
    for m in _NUMBERED.finditer(text):
        word = stem(m.group(1))
        for name in sorted(facts.tables):
            table = ctx.catalog.table(name)
            if table is None:
                continue
            for column in table.columns:
                if stem(column.name.lower()) != word or column.name in table.primary_key:
                    continue
                if (name, column.name) not in facts.columns:
                    raise LinkError(
                        f"the question asks for the {m.group(1)} number; "
                        f"the statement does not read {table.name}.{column.name}"
                    )
