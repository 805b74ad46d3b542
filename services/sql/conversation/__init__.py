"""Follow-ups on an earlier statement: a limit, filter, regroup, time shift or a reference
to the previous rows applied to the previous statement's parts.
"""

from __future__ import annotations

from services.sql.conversation._conditions import Link
from services.sql.conversation._followup import (
    MAX_PRIOR_CHARS,
    MAX_PRIOR_WORDS,
    Prior,
    Relation,
    built,
    deciding,
    edited,
    labels,
    pointed,
    refers,
    restrict,
    shows_only_rows,
    subject,
)
from services.sql.conversation._measure import bounded
from services.sql.conversation._named import named_as_before
from services.sql.conversation._periods import Window, new_window, time_filters
from services.sql.conversation._rows import rows_asked
from services.sql.conversation._statement import FollowUpError, adds_only_keys, same_query
from services.sql.conversation._there import kept_there, points_at_a_place

__all__ = [
    "MAX_PRIOR_CHARS",
    "MAX_PRIOR_WORDS",
    "FollowUpError",
    "Link",
    "Prior",
    "Relation",
    "Window",
    "adds_only_keys",
    "bounded",
    "built",
    "deciding",
    "edited",
    "kept_there",
    "labels",
    "named_as_before",
    "new_window",
    "pointed",
    "points_at_a_place",
    "refers",
    "restrict",
    "rows_asked",
    "same_query",
    "shows_only_rows",
    "subject",
    "time_filters",
]
