"""Issue 45 (s62, cold scripts): after a count per group ("how many shops per region"),
"list the north ones" names one group by its value and stands "ones" for the counted
rows: it lists the counted noun's rows of that group, asked anew. Read alone, "ones"
named nothing and the turn was refused ("could not place 'ones'")."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import resolve

PER_REGION = PriorTurn(
    "how many shops per region",
    "how many shops per region",
    row_count=4,
    sql="SELECT t1.region_id AS region_id, t1.region AS region, COUNT(*) AS count "
    "FROM public.shops AS t0 JOIN public.regions AS t1 ON t1.region_id = t0.region "
    "GROUP BY t1.region_id, t1.region",
)


@pytest.mark.parametrize("follow_up", ["list the north ones", "show me the north ones?"])
def test_the_value_ones_after_a_count_per_group_lists_that_groups_rows(follow_up: str):
    resolution = resolve(follow_up, [PER_REGION])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.question == "list the shops whose region is north?"


def test_the_value_ones_after_a_listing_is_not_read_as_a_group():
    # the previous answer counts no group: "ones" is not its counted rows
    listing = PriorTurn(
        "list the shops",
        "list the shops",
        row_count=9,
        sql="SELECT t0.name AS name FROM public.shops AS t0",
    )
    resolution = resolve("list the north ones", [listing])
    assert "whose" not in resolution.question
