"""Statements as Postgres reads them, parsed once: the gate and the linker's verifier
read the same text one after the other (the linker checks what it wrote, then the gate
checks it again before it may run), so the last statements parsed are kept and handed
out as copies: a caller may change its copy (the gate qualifies tables in place) without
touching anyone else's."""

from __future__ import annotations

from collections import OrderedDict

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

_RECENT_MAX = 256
_recent: OrderedDict[str, tuple[exp.Expr, ...]] = OrderedDict()


def parse_statements(text: str, *, shared: bool = False) -> list[exp.Expr]:
    """The statements of ``text`` (Postgres dialect), each a fresh copy (with ``shared``
    the kept trees themselves, for a caller that only reads them); sqlglot's
    ParseError / TokenError when it does not parse. A comment after the final ';' (common
    in model output) parses as a Semicolon node holding the comment, not as a
    statement, and is left out."""
    found = _recent.get(text)
    if found is None:
        found = tuple(
            s
            for s in sqlglot.parse(text, read="postgres", error_level=ErrorLevel.RAISE)
            if s and not isinstance(s, exp.Semicolon)
        )
        _recent[text] = found
        if len(_recent) > _RECENT_MAX:
            _recent.popitem(last=False)
    else:
        _recent.move_to_end(text)
    return list(found) if shared else [s.copy() for s in found]
