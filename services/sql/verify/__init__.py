"""Right or refused: checks every statement passes before it is answered, each following
from SQL, the question's form and the data alone.

Two kinds, at two moments:

- **the question's phrases** (``_phrases``), while the offline linker composes: every
  phrase that changes an answer (a number, a superlative, a negation, an aggregate word,
  a grouping) is in the statement, what it shows is what was asked (``_outputs``), and
  no count is one a join restricts (``_restricted``: a rate whose denominator keeps
  only the rows with a numerator, a HAVING tested on the rows another count's join
  keeps); the linker keeps the first of its readings that passes;
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
