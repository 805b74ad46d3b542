"""A small CRM catalog shaped like the demo warehouse (prompt and fence tests)."""

from __future__ import annotations

from services.common.llm import CatalogColumn, CatalogTable, SchemaCatalog


def _c(
    name: str, typ: str, *values: str, pk: bool = False, ref: str | None = None
) -> CatalogColumn:
    return CatalogColumn(name, typ, sample_values=values, primary_key=pk, references=ref)


CRM = SchemaCatalog(
    (
        CatalogTable(
            "companies",
            (
                _c("id", "integer", pk=True),
                _c("name", "text", "Acme Corp", "Globex", "Initech", "Umbrella Health"),
                _c(
                    "industry",
                    "text",
                    "Healthcare",
                    "Finance",
                    "Retail",
                    "Manufacturing",
                    "Technology",
                ),
                _c("region", "text", "North America", "EMEA", "APAC", "LATAM"),
                _c("employees", "integer"),
                _c("annual_revenue", "numeric"),
                _c("created_at", "date"),
            ),
            comment="Accounts we sell to",
            row_estimate=200,
        ),
        CatalogTable(
            "contacts",
            (
                _c("id", "integer", pk=True),
                _c("company_id", "integer", ref="companies.id"),
                _c("first_name", "text"),
                _c("last_name", "text"),
                _c("email", "text"),
                _c("title", "text", "CFO", "CTO", "VP Sales", "Procurement Manager"),
                _c("phone", "text"),
            ),
            comment="People at accounts",
            row_estimate=800,
        ),
        CatalogTable(
            "opportunities",
            (
                _c("id", "integer", pk=True),
                _c("company_id", "integer", ref="companies.id"),
                _c("product_id", "integer", ref="products.id"),
                _c("name", "text"),
                _c(
                    "stage",
                    "text",
                    "Prospecting",
                    "Qualification",
                    "Proposal",
                    "Negotiation",
                    "Closed Won",
                    "Closed Lost",
                ),
                _c("amount", "numeric"),
                _c("score", "integer"),
                _c("owner", "text", "Dana Reyes", "Sam Patel", "Lee Wong"),
                _c("close_date", "date"),
            ),
            comment="Deals in the pipeline",
            row_estimate=1500,
        ),
        CatalogTable(
            "activities",
            (
                _c("id", "integer", pk=True),
                _c("company_id", "integer", ref="companies.id"),
                _c("contact_id", "integer", ref="contacts.id"),
                _c("type", "text", "Call", "Email", "Meeting", "Demo"),
                _c("subject", "text"),
                _c("occurred_at", "timestamp with time zone"),
            ),
            comment="Calls, emails and meetings",
            row_estimate=5000,
        ),
        CatalogTable(
            "products",
            (
                _c("id", "integer", pk=True),
                _c("name", "text", "Insight Analytics", "Shield Security", "Core Platform"),
                _c("category", "text", "Analytics", "Security", "Platform"),
                _c("list_price", "numeric"),
            ),
            comment="What we sell",
            row_estimate=12,
        ),
    )
)
