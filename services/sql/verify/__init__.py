"""Right or refused: checks every statement passes before it is answered, each following
from SQL, the question's form and the data alone.
"""

from __future__ import annotations

from services.sql.verify._phrases import verify_statement

__all__ = ["verify_statement"]
