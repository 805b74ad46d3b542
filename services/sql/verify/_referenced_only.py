"""A listing of the rows a question opens with, answered by what those rows refer to.

"documents using a book template" answered with ``documents.template_id`` alone (the
word "template" read as the column to show) lists templates, each once, and no
document: the question names the documents as what it wants and "a book template" as a
condition on them; "documents using a template of type Book" answered with
``templates.template_id`` (the templates some document uses) lists the same. Held here:
where the question's first noun (after the listing verbs and articles) is the last word
of the name of a table the statement reads, a statement that lists without aggregating
and shows only columns that name another table, with an ``id`` / ``code`` / ``key``
after (``template_id``, ``template_type_code``: references to, or keys of, other rows),
is refused, unless the question asks for ids or codes itself. A column of the asked
table's own ("document_name") or any other column shown passes.
"""

from __future__ import annotations

import re

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._facts import StatementFacts
from services.sql.words import stem

# words a listing opens with before the noun it lists
_LEAD = frozenset(
    "list show give get find return display tell what which who are is were was me us "
    "the all of every each our my any some please".split()
)
_ASKS_KEYS = re.compile(r"\b(?:ids?|identifiers?|codes?|keys?|numbers?|nos?)\b")
_REFERENCE_ENDS = frozenset({"id", "code", "key"})


def check_referenced_only(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """Refuse (:class:`LinkError`) a listing of the question's rows that shows only their
    references to other tables (see the module's docstring)."""
    if facts.aggregates or facts.grouped or not facts.outputs or _ASKS_KEYS.search(text):
        return
    head = _head_noun(text)
    if head is None:
        return
    asked = [t for t in facts.tables if (w := ctx.vocab.table_words.get(t)) and w[-1] == stem(head)]
    if len(asked) != 1:
        return
    others = [w for t, w in ctx.vocab.table_words.items() if t != asked[0] and w]
    if all(_names_another(ctx.vocab.column_words.get((t, c), []), others)
           for t, c in facts.outputs):  # fmt: skip
        raise LinkError(f"the statement shows what the {head} refer to, not the {head}")


def _head_noun(text: str) -> str | None:
    """The question's first word that is not a listing verb or an article."""
    for match in re.finditer(r"[a-z]+", text):
        if match.group(0) not in _LEAD:
            return str(match.group(0))
    return None


def _names_another(column: list[str], tables: list[list[str]]) -> bool:
    """``template_id`` of documents: another table's name (or its last words), then a
    word that makes it a reference."""
    if len(column) < 2 or column[-1] not in _REFERENCE_ENDS:
        return False
    named = column[:-1]
    return any(len(t) >= len(named) and t[-len(named) :] == named for t in tables)
