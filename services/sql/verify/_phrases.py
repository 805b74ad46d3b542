"""Right or refused: the statement must account for every phrase of the question that
changes an answer, or the question is refused naming the phrase.

Word coverage (``_coverage``) asks whether each content word names something the
statement reads. That is not enough: "the singer with the largest net worth" reads the
right table and column whether or not it orders by net worth, and "visitors below age
30" reads ``age`` whether or not it compares it with 30. So the statement itself, parsed
back with sqlglot (``_facts``), is checked against the kinds of phrase that change an
answer, one module per kind, run here in a fixed order (the first refusal is the one
named):

- numbers (``_numbers``): every number of the question is in the statement;
- time (``_time``): a month named bounds something, a grain said reads a date, "when"
  returns one;
- rankings (``_rankings``): a superlative or a clause-ending "first"/"last" ranks; a
  ranking by a count answers a question that counts; a ranking by a date ranks by the
  date named;
- aggregate words (``_aggregates``): "average", "how many", "total", "how much",
  "than the average" are computed;
- negation (``_negation``): a "not" negates something;
- comparatives (``_comparatives``): "older than", "more than" compare something;
- grouping words (``_grouping``): "each"/"per" groups, by what it names ("per" a
  catalog word with nothing aggregated lists rows, not a value per group); one value
  asked is one value; "distinct" and "order" are kept;
- rows asked (``_referenced_only``): a listing of the rows the question opens with
  shows more of them than their references to other tables;
- every name word names a table or column the statement uses (``unexplained``, here),
  a unit written after a number the statement compares ("60 minutes") excepted
  (``services.sql.words.units_of``) — and that unit is one the compared column counts
  (``_units``: its name, else its extent rules out a finer unit);
- a "<name> number" is the column of that name where a table read stores one
  (``_numbered``);
- alternatives (``_alternatives``): "either … or" has alternatives; two values of one
  column are not both required of one row;
- directions (``_directions``): ``origin``/``dest`` read as the question's direction says;
- table-named values (``_table_values``): a value saying only its table's name is the
  question's noun for the rows;
- outputs (``_outputs``), counts a join restricts (``_restricted``) and defined terms
  (``_terms``): what it shows is what was asked;
- whose names (``_whose_names``): "the names of the <rows>" shows a name of theirs, not
  of a table that only joins to them;
- counts (``_counted``): a count counts the noun asked, not rows that refer to it nor
  the values of a column nobody named;
- joins unasked (``_unasked_join``): an inner join used only to keep the rows that have
  a referring row is one the question says;
- bridge paths (``_bridge_path``): no path through a table the question never names
  reaches a table a reference the question names may hold directly ("received" for
  ``receiver_id``);
- the event bounded (``_bounded``): a date bound is on a date or table the question
  names, not another table's time.

The checks read only the question's words and the statement; nothing here knows a
schema. A phrase a check cannot see satisfied refuses the question with that phrase.
"""

from __future__ import annotations

from services.sql.gate import parse_statements
from services.sql.linker import LinkContext, LinkError, prose_of_definitions, unexplained
from services.sql.verify._aggregates import (
    check_aggregate_words,
    check_how_much,
    check_share_divided,
    check_than_average,
    check_total_beside_count,
)
from services.sql.verify._alternatives import check_either_or, check_one_value_per_row
from services.sql.verify._bounded import check_bounded_event
from services.sql.verify._bridge_path import check_bridge_beside_reference
from services.sql.verify._comparatives import check_comparatives
from services.sql.verify._counted import check_counted
from services.sql.verify._degenerate import (
    check_aggregate_of_a_group,
    check_shows_its_own_literal,
)
from services.sql.verify._directions import check_directions, check_roles
from services.sql.verify._event_rows import check_event_read
from services.sql.verify._facts import (
    column_words,
    dated_condition,
    statement_facts,
    without_quotes,
)
from services.sql.verify._fanned_measure import check_fanned_measure
from services.sql.verify._grouping import check_grouping
from services.sql.verify._negation import check_negation
from services.sql.verify._numbered import check_named_number
from services.sql.verify._numbers import check_numbers
from services.sql.verify._outputs import check_outputs
from services.sql.verify._partial_values import check_value_said_in_part
from services.sql.verify._rankings import (
    check_ranked_by_a_count,
    check_ranked_by_the_date_said,
    check_ranked_by_the_text_counted,
    check_ranks_the_rows_said,
    check_superlatives,
)
from services.sql.verify._referenced_only import check_referenced_only
from services.sql.verify._restricted import check_restricted
from services.sql.verify._self_reference import check_named_through_self_reference
from services.sql.verify._statement import read_statement
from services.sql.verify._superlative_row import check_superlative_row
from services.sql.verify._table_values import check_table_named_as_a_value
from services.sql.verify._terms import check_terms_computed
from services.sql.verify._time import (
    check_months,
    check_parts_of_day,
    check_time_used,
    check_when,
)
from services.sql.verify._unasked_join import check_unasked_join
from services.sql.verify._units import check_units
from services.sql.verify._whose_names import check_whose_names
from services.sql.verify._year_window import check_year_window
from services.sql.words import units_of


def verify_statement(ctx: LinkContext, sql: str) -> None:
    """Refuse (:class:`LinkError`) when the statement leaves out a phrase of the question
    that changes the answer; see the module's docstring for the kinds."""
    facts = statement_facts(sql)
    text = without_quotes(ctx.low)
    reads = column_words(ctx, facts)
    check_numbers(text, facts, reads, dated=dated_condition(sql, facts))
    check_months(ctx.original, sql, facts, reads)
    check_parts_of_day(ctx, text, facts)
    check_superlatives(text, facts, reads)
    check_than_average(text, facts)
    check_negation(text, facts)
    check_aggregate_words(text, facts, reads, ctx)
    check_total_beside_count(text, facts, reads, ctx)
    check_year_window(ctx, text, facts, sql)
    check_event_read(ctx, text, facts)
    check_when(ctx, text, facts)
    check_how_much(ctx, text, facts)
    check_share_divided(ctx, text, sql)
    check_grouping(ctx, text, facts)
    check_referenced_only(ctx, text, facts)
    tables = sorted({t for t, _ in facts.columns} | facts.tables)
    word = unexplained(
        ctx.question,
        ctx.vocab,
        tables,
        facts.strings,
        divides="/" in sql,
        terms=ctx.applied,
        forgiven=prose_of_definitions(ctx) | ctx.known | units_of(ctx.question, facts.numbers),
        columns=facts.columns,
    )
    if word is not None:
        raise LinkError(f"the statement uses nothing {word!r} names")
    check_one_value_per_row(facts)
    check_named_number(ctx, text, facts)
    check_time_used(ctx, text, sql, facts)
    check_directions(ctx, facts)
    check_roles(ctx, facts)
    tree = parse_statements(sql, shared=True)[0]
    check_aggregate_of_a_group(tree)
    nodes = read_statement(tree, ctx.catalog)
    check_units(ctx, tree, nodes)
    check_restricted(tree, nodes, ctx.graph)
    check_table_named_as_a_value(ctx, nodes)
    check_value_said_in_part(ctx, nodes)
    check_comparatives(text, tree)
    check_shows_its_own_literal(tree, nodes)  # after the checks that say why
    check_either_or(text, tree)
    check_outputs(ctx, tree, nodes)
    check_superlative_row(ctx, tree)
    check_whose_names(ctx, tree, nodes)
    check_named_through_self_reference(ctx, tree, nodes)
    check_terms_computed(ctx, tree)
    check_ranked_by_a_count(text, tree)
    check_ranked_by_the_date_said(ctx, tree, nodes)
    check_ranked_by_the_text_counted(ctx, tree, nodes)
    check_ranks_the_rows_said(ctx, tree, nodes)
    check_counted(ctx, tree, nodes)
    check_unasked_join(ctx, tree, nodes)
    check_fanned_measure(ctx, tree, nodes)
    check_bridge_beside_reference(ctx, tree, nodes)
    check_bounded_event(ctx, tree, nodes)
