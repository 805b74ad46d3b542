"""A stored value said only in small part is another thing than the one the question
names: "which pitcher had the most strikeouts" answered with ``award_id = 'TSN Pitcher of
the Year'`` (the players who won that award).

The linker may take a value of several words for one of its words ("won" for a stage
``'Closed Won'``, "Honolulu" for the airport ``'Honolulu Intl'``): a state or a name the
question says by its distinctive word. A value whose words the question says fewer than
half of is no longer that: it is a title that merely contains the question's word.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._statement import StatementNodes
from services.sql.words import value_words_said


def check_value_said_in_part(ctx: LinkContext, nodes: StatementNodes) -> None:
    """A text value compared by equality, of two words or more, some of which the
    question says, is refused when fewer than half of its words are said. A value none of whose words is said (an abbreviation, a
    code the question spells otherwise) is left to the checks of values."""
    for literal in nodes.literals:
        compared = literal.parent
        if isinstance(compared, exp.Tuple):
            compared = compared.parent
        if not isinstance(compared, exp.EQ | exp.In) or not isinstance(compared.this, exp.Column):
            continue
        heard, words = value_words_said(literal.this, ctx.low)
        if len(words) < 2 or not heard or len(heard) == len(words):
            continue
        if 2 * len(heard) < len(words):
            raise LinkError(
                f"{literal.this!r} is said only in part ({', '.join(heard)}): the question "
                f"names another thing than that value"
            )
