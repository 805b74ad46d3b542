"""Issue 45 (s60): a value swap's rewritten question replaces the value the new one is
like. After "How many flights that are United left JFK in March?" (the statement compares
'United Air Lines Inc.' and 'JFK'), "what about Delta instead?" was rewritten "... left
Delta in March?": only 'JFK' is said in the question as its statement stores it, and the
one value found was taken as the one compared. Where the statement compares more values
than the question says verbatim, the slot is read from the question's shape (a name for
a name, a code for a code, also when said with its preposition: "and from LGA?")."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import resolve

UNITED = PriorTurn(
    "just the United ones",
    "How many parcels that are Acme left LHR in March?",
    row_count=1,
    sql="SELECT COUNT(*) FROM parcels p JOIN couriers c ON c.code = p.courier "
    "WHERE p.month = 3 AND p.origin = 'LHR' AND c.name = 'Acme Freight Ltd.'",
)


@pytest.mark.parametrize(
    ("follow_up", "resolved"),
    [
        ("what about Zenith instead?", "How many parcels that are Zenith left LHR in March?"),
        ("and for Zenith?", "How many parcels that are Zenith left LHR in March?"),
        ("what about LGW?", "How many parcels that are Acme left LGW in March?"),
        ("and from LGW?", "How many parcels that are Acme left from LGW in March?"),
    ],
)
def test_a_swap_replaces_the_value_shaped_like_the_new_one(follow_up: str, resolved: str):
    resolution = resolve(follow_up, [UNITED])
    assert (resolution.kind, resolution.question) == (FollowUpKind.VALUE_SWAP, resolved)


def test_the_one_value_a_statement_compares_is_still_the_one_swapped():
    # one compared value, said as stored: it is replaced whatever its shape
    one = PriorTurn(
        "q",
        "How many parcels left LHR in March?",
        row_count=1,
        sql="SELECT COUNT(*) FROM parcels WHERE month = 3 AND origin = 'LHR'",
    )
    resolution = resolve("what about Gatwick?", [one])
    assert resolution.question == "How many parcels left Gatwick in March?"
