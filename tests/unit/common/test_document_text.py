"""A document's body is cleaned of control characters, not refused (issue 48): escapes go
whole, C1 characters become the Windows-1252 characters they were, the count is told."""

from __future__ import annotations

import pytest

from services.common import clean_document_text


@pytest.mark.parametrize(
    ("raw", "clean", "removed"),
    [
        ("Refunds within 30 days.\tPage\fbreak\r\n", "Refunds within 30 days.\tPage\fbreak\r\n", 0),
        ("Refunds\x00 within 30 days.", "Refunds within 30 days.", 1),
        ("\x1b[1;31mred\x1b[0m text", "red text", 11),
        ("title\x1b]0;pwned\x07 after", "title after", 10),
        ("It\x92s \x93quoted\x94", "It\u2019s \u201cquoted\u201d", 0),
        ("odd\x81byte", "oddbyte", 1),
        ("bell\x07 and backspace\x08", "bell and backspace", 2),
    ],
)
def test_a_body_is_cleaned_and_the_removed_characters_counted(raw, clean, removed):
    assert clean_document_text(raw) == (clean, removed)
