"""The demo documents: account briefs, call notes, product sheets and policies written from
the seeded CRM that also fills the SQL warehouse, plus planted secrets and injection
payloads; and a loader that ingests them through the RetrievalService API."""

from __future__ import annotations

from services.demo._cli import add_commands
from services.demo._content import REVIEW_PHRASE
from services.demo._corpus import (
    ACCOUNT_BRIEF,
    CALL_NOTE,
    COMPOUND_QUESTION,
    DEFAULT_ACCOUNTS,
    POLICY,
    PRODUCT_SHEET,
    CompoundAnswer,
    DemoCorpus,
    DemoDocument,
    companies_mentioning,
    compound_answer,
    generate_documents,
    open_pipeline,
    review_deals,
    top_accounts_by_open_pipeline,
)
from services.demo._loader import (
    LoadProgress,
    LoadReport,
    check_demo_documents,
    demo_documents_loaded,
    load_demo_documents,
    to_document_input,
)

__all__ = [
    "ACCOUNT_BRIEF",
    "CALL_NOTE",
    "COMPOUND_QUESTION",
    "DEFAULT_ACCOUNTS",
    "POLICY",
    "PRODUCT_SHEET",
    "REVIEW_PHRASE",
    "CompoundAnswer",
    "DemoCorpus",
    "DemoDocument",
    "LoadProgress",
    "LoadReport",
    "add_commands",
    "check_demo_documents",
    "companies_mentioning",
    "compound_answer",
    "demo_documents_loaded",
    "generate_documents",
    "load_demo_documents",
    "open_pipeline",
    "review_deals",
    "to_document_input",
    "top_accounts_by_open_pipeline",
]
