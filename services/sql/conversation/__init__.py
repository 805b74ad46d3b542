"""Follow-ups on an earlier statement: a limit, filter, regroup, time shift or a reference
to the previous rows applied to the previous statement's parts.
"""

from __future__ import annotations

from services.sql.conversation._followup import (
    MAX_PRIOR_CHARS,
    MAX_PRIOR_WORDS,
    FollowUpError,
    Prior,
    Relation,
    edited,
    labels,
    pointed,
    refers,
    restrict,
    subject,
)

__all__ = [
    "MAX_PRIOR_CHARS",
    "MAX_PRIOR_WORDS",
    "FollowUpError",
    "Prior",
    "Relation",
    "edited",
    "labels",
    "pointed",
    "refers",
    "restrict",
    "subject",
]
