"""Fixed prose of the demo corpus: product sheets, policies and the sentences call notes are
built from. Kept apart from the generator so the wording can change without touching logic.

The phrase "security review" is reserved: only the call notes of accounts under review
may carry it (the compound demo question depends on that), so nothing here uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

REVIEW_PHRASE = "security review"


@dataclass(frozen=True)
class ProductCopy:
    """Marketing and technical copy for one product sheet."""

    summary: str
    capabilities: tuple[str, ...]
    integrations: str
    compliance: str
    ideal_for: str


PRODUCT_COPY: dict[str, ProductCopy] = {
    "Tandem Platform Starter": ProductCopy(
        summary=(
            "The entry edition of the Tandem platform for teams of up to 50 sellers: a shared "
            "pipeline, activity logging and standard dashboards, live in a week."
        ),
        capabilities=(
            "Pipeline boards with drag-and-drop stages",
            "Activity capture from email and calendar",
            "Twelve standard dashboards and weekly digest emails",
            "Role-based access with three built-in roles",
        ),
        integrations="Google Workspace and Microsoft 365 calendars and mail; CSV import.",
        compliance="Hosted in our SOC 2 Type II audited environment; data encrypted at rest.",
        ideal_for="SMB and Mid-Market teams replacing spreadsheets.",
    ),
    "Tandem Platform Enterprise": ProductCopy(
        summary=(
            "The full Tandem platform for large sales organisations: territories, approval "
            "workflows, sandbox environments and a 99.9% uptime commitment."
        ),
        capabilities=(
            "Territory and quota management across regions",
            "Multi-step discount and contract approval workflows",
            "Sandbox workspaces for testing configuration changes",
            "SAML single sign-on, SCIM provisioning and exportable audit logs",
            "Regional data residency (EU, US, APAC)",
        ),
        integrations="Data Connect for ERP and warehouse sync; REST and gRPC APIs; webhooks.",
        compliance=(
            "SOC 2 Type II and ISO 27001 certified; customer-managed encryption keys available; "
            "annual third-party penetration test with a summary shared under NDA."
        ),
        ideal_for="Enterprise accounts with several regions or strict compliance needs.",
    ),
    "Insight Analytics": ProductCopy(
        summary=(
            "Self-service analytics on top of CRM data: cohort views, win-rate analysis and "
            "board-ready reports without exporting to spreadsheets."
        ),
        capabilities=(
            "Win-rate and sales-cycle analysis by segment, region and product",
            "Saved reports with scheduled delivery",
            "Row-level permissions that follow the CRM's territories",
        ),
        integrations="Reads directly from the Tandem platform; exports to BI tools over ODBC.",
        compliance="Inherits the platform's access controls and audit logging.",
        ideal_for="Revenue operations teams and sales leadership.",
    ),
    "Forecast AI": ProductCopy(
        summary=(
            "Machine-learning forecasts of quarterly bookings with deal-level risk scores, "
            "trained on the customer's own pipeline history."
        ),
        capabilities=(
            "Weekly forecast with confidence bands per team and region",
            "Deal risk scores explaining the top three risk factors",
            "Forecast accuracy tracking against closed results",
        ),
        integrations="Uses platform data; optional enrichment from Data Connect sources.",
        compliance=(
            "Models are trained per customer; no customer data is used to train shared models."
        ),
        ideal_for="Mid-Market and Enterprise teams with at least two years of pipeline history.",
    ),
    "Data Connect": ProductCopy(
        summary=(
            "Managed connectors that keep the CRM in sync with ERP, billing and data "
            "warehouse systems, with field mapping and conflict handling."
        ),
        capabilities=(
            "Prebuilt connectors for SAP, Oracle NetSuite, Microsoft Dynamics and Snowflake",
            "Nightly or near-real-time sync with conflict resolution rules",
            "Field-level mapping with validation and a replayable error queue",
        ),
        integrations="SAP S/4HANA, NetSuite, Dynamics 365, Snowflake, BigQuery, Postgres.",
        compliance="Credentials are stored in a managed vault and never shown after entry.",
        ideal_for="Accounts whose ERP is the system of record for orders and invoices.",
    ),
    "Pipeline Sync": ProductCopy(
        summary=(
            "A lightweight two-way sync between Tandem and legacy CRMs. Retired: no longer "
            "sold to new customers; existing contracts are supported until renewal."
        ),
        capabilities=(
            "Two-way sync of accounts, contacts and opportunities",
            "Hourly schedule with email alerts on failures",
        ),
        integrations="Legacy CRM exports over SFTP; superseded by Data Connect.",
        compliance="Runs in the platform environment; no separate certification.",
        ideal_for="Existing customers migrating off a legacy CRM.",
    ),
    "Security Suite": ProductCopy(
        summary=(
            "Advanced security controls for regulated customers: customer-managed keys, "
            "field-level encryption, session policies and a security event feed."
        ),
        capabilities=(
            "Customer-managed encryption keys (AWS KMS, Azure Key Vault, Google Cloud KMS)",
            "Field-level encryption for sensitive contact and deal fields",
            "IP allow-lists and session length policies",
            "Security event stream to the customer's SIEM",
        ),
        integrations="Splunk, Microsoft Sentinel and Datadog security event forwarding.",
        compliance=(
            "Designed for SOC 2, ISO 27001, HIPAA and GDPR programmes; buyers usually involve "
            "their security team before purchase, so allow time for their questionnaire."
        ),
        ideal_for="Healthcare, financial services and government accounts.",
    ),
    "Premium Support": ProductCopy(
        summary=(
            "Around-the-clock support with a named technical account manager and faster "
            "response targets than the standard plan."
        ),
        capabilities=(
            "24x7 coverage for severity-1 incidents with a one-hour response target",
            "A named technical account manager and quarterly health checks",
            "Priority routing for configuration questions",
        ),
        integrations="Ticket creation from Slack and Microsoft Teams.",
        compliance="Support staff access customer workspaces only with logged, time-boxed grants.",
        ideal_for="Accounts where the CRM is business-critical.",
    ),
}


@dataclass(frozen=True)
class Policy:
    """One company policy document: id slug, title, markdown body."""

    slug: str
    title: str
    body: str


POLICIES: tuple[Policy, ...] = (
    Policy(
        "support",
        "Customer support policy",
        """## Support plans
Every subscription includes Standard Support: business hours in the customer's region,
email and portal tickets, and a next-business-day response target. Premium Support adds
24x7 coverage, a named technical account manager and faster targets.

## Severity levels and response targets
| Severity | Meaning | Standard | Premium |
|---|---|---|---|
| 1 | Production down, no workaround | 4 business hours | 1 hour, 24x7 |
| 2 | Major feature impaired | 1 business day | 4 hours |
| 3 | Minor issue or question | 2 business days | 1 business day |

## Escalation
A severity-1 ticket pages the on-call engineer and the support manager at once. If a
severity-1 incident lasts longer than four hours, the account owner informs the customer's
executive sponsor and a written incident report follows within five business days.

## What support does not cover
Custom code written by the customer or a partner, third-party systems outside Data Connect's
supported connectors, and training beyond the onboarding package.
""",
    ),
    Policy(
        "pricing",
        "Pricing and discount policy",
        """## List prices
List prices are set per product and published on the product sheets. Quotes are always
built from list price; any reduction is a discount and follows the approval rules below.

## Discount approval
- Account Executives may approve discounts up to 10% of list price.
- Sales Managers may approve up to 20%.
- Anything above 20%, and any free months, needs VP Sales approval.
- Discounts above 35% are not offered.

## Multi-year terms and renewals
A three-year commitment earns an additional 5% discount. Renewal price increases are capped
at 7% per year for customers in good standing. Year-two pricing objections are handled by
offering a multi-year term rather than a deeper one-year discount.

## Competitive situations
When a customer is evaluating a competitor, share the comparison sheet and references;
match competitor pricing only with VP Sales approval.
""",
    ),
    Policy(
        "security-compliance",
        "Security and compliance overview",
        """## Certifications
Tandem is SOC 2 Type II audited every year and ISO 27001 certified. The SOC 2 report and the
penetration test summary are shared with prospects under NDA.

## Data residency
Customer data is stored in the region chosen at signup: EU (Frankfurt), US (Virginia) or
APAC (Singapore). Backups stay in the same region.

## Customer questionnaires
Sales engineers answer customer security questionnaires within ten business days. Standard
answers live in the trust portal; anything new goes to the security team.

## Access controls
SAML single sign-on and SCIM provisioning are included in the Enterprise edition. Audit logs
record every sign-in, export and permission change, and can be streamed to a SIEM with the
Security Suite.
""",
    ),
    Policy(
        "data-retention",
        "Data retention and deletion policy",
        """## Active accounts
Customer data is kept for as long as the subscription is active. Activity logs older than
seven years are archived to cold storage and remain searchable on request.

## After cancellation
Workspaces are read-only for 30 days after a subscription ends, then deleted within 60 days.
Customers can request an export at any time before deletion.

## Backups
Encrypted backups are kept for 35 days and expire on their own; restored data follows the
same deletion schedule.
""",
    ),
    Policy(
        "refunds",
        "Refund and cancellation policy",
        """## Cancellation
Annual subscriptions can be cancelled at renewal with 30 days' notice. Monthly plans can be
cancelled at any time and end at the close of the billing month.

## Refunds
Prepaid annual fees are refundable on a pro-rated basis only when Tandem misses its uptime
commitment for two consecutive months. Services fees for completed onboarding are not refunded.

## Credits
Service credits for missed uptime targets are applied to the next invoice on request.
""",
    ),
)

# One short paragraph per CRM concern (the concern strings come from the warehouse notes).
CONCERN_DETAILS: dict[str, tuple[str, ...]] = {
    "pricing for the second year": (
        "Pricing objection: {first} pushed back on the year-two price and said their budget "
        "for next year is flat. We pointed to the 7% renewal cap and offered to model a "
        "three-year term.",
        "Pricing objection: {first} called the year-two uplift too high and asked for a "
        "deeper discount; we explained the approval limits in our pricing policy.",
    ),
    "data residency in the EU": (
        "{first} needs all customer data kept in the EU and asked for our SOC 2 Type II "
        "report and the data processing agreement.",
        "Data residency came up again: their legal team wants the Frankfurt region and a "
        "copy of the SOC 2 report before signing.",
    ),
    "integration with their ERP": (
        "They run {erp} as the system of record for orders; {first} wants nightly sync "
        "through Data Connect and asked how field conflicts are resolved.",
        "Integration with {erp} is the main blocker: {first} asked for a mapping workshop.",
    ),
    "onboarding time for the sales team": (
        "{first} worried that onboarding their sales team will take too long; we outlined "
        "the two-week onboarding plan and the train-the-trainer sessions.",
    ),
    "single sign-on and audit logs": (
        "Their IT team asked about SAML single sign-on, SCIM provisioning and exportable "
        "audit logs, and whether we are SOC 2 certified.",
        "{first} confirmed SSO is mandatory for them and wants audit logs streamed to their SIEM.",
    ),
    "forecast accuracy": (
        "{first} asked how accurate Forecast AI has been for customers of their size; we "
        "offered to back-test it on their last eight quarters.",
    ),
    "contract length": (
        "{first} prefers a one-year contract over the proposed three-year term.",
        "Contract length is open: procurement asked for a two-year term with an exit clause.",
    ),
    "support response times": (
        "{first} asked what response time Premium Support guarantees for severity-1 "
        "incidents; we walked through the support policy.",
    ),
}

ERP_SYSTEMS: tuple[str, ...] = (
    "SAP S/4HANA",
    "Oracle NetSuite",
    "Microsoft Dynamics 365",
    "Infor CloudSuite",
)

# Paragraph added to one call of every account whose Security Suite deal is in late stage.
# Each sentence names the account, so an extractive answer that quotes one sentence still
# says which account it is about.
REVIEW_PARAGRAPH = (
    "Security review: {company}'s security team has opened a formal security review of our "
    "Security Suite proposal (deal stage: {stage}). {first} sent a vendor questionnaire and "
    "asked for the SOC 2 Type II report and the penetration test summary; {company} wants "
    "the security review finished before {close}. {owner} owns the follow-up."
)
