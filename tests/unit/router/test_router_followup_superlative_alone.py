"""A superlative said alone is one row (issue 45, s65): "just the highest" after "average
freight per shipper" (then narrowed to orders going to France) was read as a condition
("… that are highest?") and refused, as no column holds "highest". It is the first row
of the earlier answer by its own measure, as "just the highest one" and "only the top"
already were: a row limit of one, from the end the superlative says. "best"/"worst"
say no end, and "the first"/"the last" alone still pick a listed member."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, resolve

PER_SHIPPER = PriorTurn(
    "only orders going to France",
    "average freight per shipper that are orders going to France?",
    row_count=3,
    sql="SELECT t1.shipper_id AS shipper_id, t1.company_name AS company_name, "
    "AVG(t0.freight) AS avg_freight FROM public.orders AS t0 JOIN public.shippers AS t1 "
    "ON t1.shipper_id = t0.shipper_id WHERE (t0.ship_country = 'France') "
    "GROUP BY t1.shipper_id, t1.company_name",
)
TOP_PRODUCTS = PriorTurn(
    "top 5 products by quantity sold",
    "top 5 products by quantity sold",
    members=("Camembert", "Raclette", "Gorgonzola", "Gnocchi", "Pavlova"),
    row_count=5,
    sql="SELECT t1.product_name, SUM(t0.quantity) AS sum_quantity FROM order_details AS t0 "
    "JOIN products AS t1 ON t1.product_id = t0.product_id GROUP BY t1.product_name "
    "ORDER BY sum_quantity DESC LIMIT 5",
)


@pytest.mark.parametrize("prior", [PER_SHIPPER, TOP_PRODUCTS])
@pytest.mark.parametrize(
    ("question", "lowest"),
    [
        ("just the highest", False),
        ("only the biggest", False),
        ("just the largest please", False),
        ("only the lowest", True),
        ("just the smallest?", True),
        ("show me only the fewest", True),
    ],
)
def test_a_superlative_alone_is_the_first_row_by_the_measure(
    prior: PriorTurn, question: str, lowest: bool
) -> None:
    resolution = resolve(question, [prior])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(
        prior.sql, Relation.ROW_LIMIT, limit=1, ascending=lowest
    )


@pytest.mark.parametrize(
    ("question", "rows"),
    [("top 3 only", 3), ("only the top one", 1), ("only the top", 1), ("just the highest one", 1)],
)
def test_a_said_count_is_still_read_as_before(question: str, rows: int) -> None:
    resolution = resolve(question, [PER_SHIPPER])
    assert resolution.builds_on == BuildsOn(PER_SHIPPER.sql, Relation.ROW_LIMIT, limit=rows)


@pytest.mark.parametrize("question", ["just the best", "only the worst"])
def test_best_or_worst_alone_say_no_end(question: str) -> None:
    resolution = resolve(question, [PER_SHIPPER])
    assert resolution.builds_on is None or resolution.builds_on.relation is not Relation.ROW_LIMIT


def test_the_last_alone_still_picks_the_last_member() -> None:
    resolution = resolve("and the last?", [TOP_PRODUCTS])
    assert resolution.kind is FollowUpKind.ORDINAL
    assert "Pavlova" in resolution.question
