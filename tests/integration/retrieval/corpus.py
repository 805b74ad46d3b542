"""A small, hand-written corpus whose queries separate dense, sparse and hybrid search."""

from __future__ import annotations

from tandem.v1 import retrieval_service_pb2 as pb

MD = pb.CONTENT_TYPE_MARKDOWN

DOCUMENTS = [
    pb.DocumentInput(
        document_id="refund-policy",
        title="Refund policy",
        category="policy",
        content_type=MD,
        text=(
            "# Refunds\n\nCustomers may cancel their subscription within thirty days of "
            "purchase and receive a full refund of the fee they paid. After that period no "
            "refund is issued, but the plan stays active until the end of the billing cycle."
        ),
    ),
    pb.DocumentInput(
        document_id="incident-review",
        title="Quarterly operations review",
        category="report",
        content_type=MD,
        text=(
            "# Operations review\n\nThe quarter was calm overall. Latency of the ingestion "
            "pipeline improved after the queue was resized, and the on-call rotation was "
            "extended to three engineers per week. One outage is still being analysed under "
            "ticket INC-48213, where a misconfigured load balancer dropped traffic for "
            "twenty minutes. The team also reviewed hiring plans and the budget for next year."
        ),
    ),
    pb.DocumentInput(
        document_id="incident-process",
        title="How we handle incidents",
        category="runbook",
        text=(
            "Every incident gets a ticket number, a severity and an owner. The incident "
            "commander opens a channel, pages the on-call engineer and posts updates every "
            "thirty minutes until the incident is resolved."
        ),
    ),
    pb.DocumentInput(
        document_id="incident-ticket-format",
        title="Incident ticket numbers",
        category="runbook",
        text=(
            "Incident tickets are numbered like INC-50017 or INC-50018: the prefix INC, a "
            "dash and five digits. Tickets such as INC-49999 are closed after the review."
        ),
    ),
    pb.DocumentInput(
        document_id="security-laptops",
        title="Laptop security standard",
        category="policy",
        text=(
            "All company laptops must use full disk encryption, a screen lock after five "
            "minutes, and automatic operating system updates."
        ),
    ),
    pb.DocumentInput(
        document_id="onboarding",
        title="Customer onboarding guide",
        category="guide",
        content_type=MD,
        text=(
            "# Onboarding\n\nNew customers get a kickoff call, a shared project plan and a "
            "named success manager.\n\n## Training\n\nAdministrators attend two live training "
            "sessions before go-live."
        ),
    ),
    pb.DocumentInput(
        document_id="pricing",
        title="Pricing tiers",
        category="guide",
        text=(
            "The Starter tier covers up to ten seats. The Growth tier adds single sign-on "
            "and audit logs. Enterprise pricing is negotiated per contract."
        ),
    ),
]

# Shares no word with the refund policy (or any document), so full text cannot find it.
PARAPHRASE_QUERY = "reimbursement after terminating early"
# A bare identifier: the meaning-based side ranks the document about ticket numbers first.
IDENTIFIER_QUERY = "INC-48213"
