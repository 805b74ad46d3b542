"""Requests to change data, told apart from questions about changes: the imperatives and
the SQL that ask for a change, the questions that only talk about one, and every
development question (none is a request)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.common import read_only_message, write_request

DATASETS = Path(__file__).resolve().parents[3].parent / "shared" / "datasets"

REQUESTS = [
    "Delete all cancelled orders",
    "delete all cancelled orders.",
    "Please delete the cancelled orders",
    "Can you remove customer 5?",
    "Could you please purge old logs?",
    "I want to delete all orders from 2019",
    "I'd like to update the price of product 5 to 10",
    "Update the price of product 5 to 10",
    "Set the status of order 17 to shipped",
    "Change the email of customer 3 to a@b.c",
    "Mark all open invoices as paid",
    "Rename the column total to amount",
    "Increase all prices by 10%",
    "Lower the price of the Security Suite by 5%",
    "Drop the orders table",
    "Let's drop the staging schema",
    "Truncate orders",
    "Wipe the test data",
    "Erase my account",
    "Archive deals older than 2020",
    "Close all open deals",
    "Cancel order 1234",
    "Refund order 55",
    "Approve all pending invoices",
    "Assign the Acme deal to Nadia",
    "Move all deals in stage Prospecting to Qualified",
    "Merge duplicate accounts Acme and ACME Inc",
    "Reset the password of user 9",
    "Restore the deleted orders",
    "Deactivate user 12",
    "Insert a new customer named Bob",
    "Add a new customer called Acme",
    "Add 5 units to order 3",
    "Create a new table for returns",
    "Alter the orders table to add a column",
    "Grant bob access to orders",
    "Revoke access for bob",
    "Import customers.csv into customers",
    "Show me the cancelled orders, then delete them",
    "How many orders are there? Delete the cancelled ones.",
    "Delete",
]
STATEMENTS = [
    "DELETE FROM orders WHERE status = 'cancelled'",
    "delete from orders",
    "UPDATE orders SET status = 'shipped'",
    "INSERT INTO customers VALUES (1, 'x')",
    "DROP TABLE orders",
    "TRUNCATE TABLE orders",
    "ALTER TABLE orders ADD COLUMN note text",
    "CREATE TABLE t (a int)",
    "CREATE INDEX i ON orders (status)",
    "GRANT SELECT ON orders TO bob",
    "REVOKE SELECT ON orders FROM bob",
    "MERGE INTO orders o USING x ON o.id = x.id WHEN MATCHED THEN DELETE",
    "SELECT * INTO backup FROM orders",
    "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
    "WITH x AS (SELECT 1) UPDATE orders SET total = 0",
    "SELECT 1; DROP TABLE orders",
    "/* harmless */ DELETE FROM orders",
    "COPY orders FROM '/tmp/orders.csv'",
]
QUESTIONS = [
    "How many orders were deleted?",
    "Which products were updated last week?",
    "List the deleted users",
    "Deleted accounts by month",
    "How do I delete an order?",
    "What does the policy say about deleting customer data?",
    "Why were orders deleted last week?",
    "Which customers requested account deletion?",
    "What was added last month?",
    "Count the removed items",
    "Which orders were dropped?",
    "What is the update frequency?",
    "When was the orders table created?",
    "Who created the most tickets?",
    "Change in revenue from 2023 to 2024",
    "Average price change per product",
    "Update on the Acme deal?",
    "Drop in sales last quarter",
    "Drop rate by stage",
    "Set of products sold in 2020",
    "Add up the amounts per region",
    "Create date of the newest account?",
    "Create a list of customers in Germany",
    "Create a chart of sales by month",
    "Create a report of pipeline by stage",
    "Create a table of revenue by month",
    "Add a column with the country",
    "Replace nulls with zero in the revenue column",
    "Remove duplicates and list the customers",
    "Cancel reason for each order",
    "Close date for each deal",
    "Transfer amount per account",
    "Refund rate by product",
    "Increase in churn per quarter",
    "Lower bound of the price range",
    "Updates per week for each project",
    "Mark Lee's orders",
    "Grant Thornton deals",
    "Can you show me which orders were cancelled?",
    "Show orders updated after May",
    "Select the names of deleted customers",
    "Analyze churn by region",
    "Cluster customers by revenue",
    "What changed in the Acme account?",
    "SELECT count(*) FROM orders WHERE deleted_at IS NOT NULL",
    "SELECT replace(name, 'a', 'b') FROM customers",
]


@pytest.mark.parametrize("text", REQUESTS + STATEMENTS)
def test_a_request_to_change_data_is_told(text: str) -> None:
    request = write_request(text)
    assert request is not None
    message = read_only_message(request)
    assert message.startswith("Tandem never changes your data")


@pytest.mark.parametrize("text", QUESTIONS)
def test_a_question_about_changes_is_no_request(text: str) -> None:
    assert write_request(text) is None


@pytest.mark.skipif(not (DATASETS / "sql").exists(), reason="the dev sets are not checked out")
def test_no_development_question_is_a_request() -> None:
    questions = [
        json.loads(line)["question"]
        for name in ("sql", "sql-spider", "qa")
        for line in (DATASETS / name / "questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    assert len(questions) >= 900
    assert sum(1 for q in questions if write_request(q) is not None) == 0


def test_the_answer_offers_what_tandem_can_do_instead() -> None:
    request = write_request("Delete all cancelled orders")
    assert request is not None and request.verb == "delete"
    assert read_only_message(request) == (
        "Tandem never changes your data: it only reads it, so it will not delete all "
        'cancelled orders. It can count or list them instead: "How many cancelled orders '
        'are there?"'
    )
    update = write_request("Update the price of product 5 to 10")
    assert update is not None
    assert read_only_message(update).endswith('"Show the price of product 5".')
    statement = write_request("DROP TABLE orders")
    assert statement is not None and statement.statement and statement.verb == "DROP TABLE"
    assert "will not run DROP TABLE" in read_only_message(statement)
