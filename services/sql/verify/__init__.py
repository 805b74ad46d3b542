"""Right or refused: checks every statement passes before it is answered, each following
from SQL, the question's form and the data alone.

Two kinds, at two moments:

- **the question's phrases** (``_phrases``, the entry), while the offline linker
  composes, on the statement's facts read back once (``_facts``): every phrase that
  changes an answer is in the statement, one module per kind of phrase: numbers
  (``_numbers``) said in a unit the compared column counts (``_units``), time (``_time``: months, grains, "when"), rankings (``_rankings``:
  superlatives, "first"/"last", a ranking by a count or by a date), aggregate words
  (``_aggregates``), negation (``_negation``), grouping words (``_grouping``: "each",
  one value asked, "distinct", "order"), alternatives (``_alternatives``: "either … or",
  two values of one column), directions (``_directions``), values that name their own
  table (``_table_values``) or are said only in small part (``_partial_values``) and
  defined terms (``_terms``); what it shows is what was
  asked (``_outputs``), and no count is one a join restricts (``_restricted``: a rate
  whose denominator keeps only the rows with a numerator, a HAVING tested on the rows
  another count's join keeps); a count counts the noun asked (``_counted``), no inner
  join only keeps rows nobody asked to keep (``_unasked_join``), no join goes round through
  an unnamed table past a reference the question names (``_bridge_path``), and a date bound is on
  the event the question names (``_bounded``), and no MAX/MIN/AVG/SUM is of a column
  the statement groups by, nor is the one column shown set equal to a literal
  (``_degenerate``); the linker keeps the first of its
  readings that passes;
- **the statement and its data** (``_checker``), after any statement ran, whoever
  proposed it: ``values`` (``_values``: a literal is a value its column holds),
  ``ties`` (``_ties``: a ranking ranks by something; a cut among some equal values is
  said in the answer), ``rows``
  (``_rows``: an empty result names the condition no row meets), ``joins``
  (``_joins``: tables joined on a key and its reference, never on a measure).
"""

from __future__ import annotations

from services.sql.verify._checker import StatementChecker
from services.sql.verify._checks import CHECKS, CheckResult, VerifyMode, failure, notes
from services.sql.verify._phrases import verify_statement
from services.sql.verify._statement import conjuncts

__all__ = [
    "CHECKS",
    "CheckResult",
    "StatementChecker",
    "VerifyMode",
    "conjuncts",
    "failure",
    "notes",
    "verify_statement",
]
