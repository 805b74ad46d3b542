"""The demo CRM, generated deterministically from a seed and a fixed anchor date.

Pure Python and reusable: the SQL warehouse loads these rows, and the demo documents
(account briefs, call notes, product sheets) can be written from the same companies,
contacts, products and activity notes, so both engines answer about one world.

Everything happens over the two years before ``anchor`` (default 2025-06-30); the same
``seed`` and ``anchor`` always give byte-identical data, on any machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

ANCHOR_DATE = date(2025, 6, 30)
DEFAULT_SEED = 20250630
DEFAULT_COMPANIES = 300

REGIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("NA", "North America", ("United States", "Canada")),
    ("EMEA", "EMEA", ("United Kingdom", "Germany", "France", "Netherlands", "Sweden", "Spain")),
    ("APAC", "APAC", ("Japan", "Australia", "Singapore", "India")),
    ("LATAM", "LATAM", ("Brazil", "Mexico", "Chile", "Colombia")),
)
REGION_WEIGHTS = (0.42, 0.30, 0.18, 0.10)

INDUSTRIES: tuple[str, ...] = (
    "Healthcare",
    "Financial Services",
    "Manufacturing",
    "Retail",
    "Technology",
    "Education",
    "Logistics",
    "Energy",
    "Media",
    "Government",
)
_INDUSTRY_SUFFIXES: dict[str, tuple[str, ...]] = {
    "Healthcare": ("Health", "Medical", "Care", "Clinics", "Biosciences"),
    "Financial Services": ("Capital", "Bank", "Financial", "Insurance", "Credit"),
    "Manufacturing": ("Industries", "Manufacturing", "Works", "Components", "Machines"),
    "Retail": ("Retail", "Stores", "Outfitters", "Market", "Goods"),
    "Technology": ("Software", "Systems", "Labs", "Networks", "Digital"),
    "Education": ("Academy", "Learning", "University", "Schools", "Education"),
    "Logistics": ("Logistics", "Freight", "Shipping", "Transport", "Cargo"),
    "Energy": ("Energy", "Power", "Solar", "Utilities", "Renewables"),
    "Media": ("Media", "Studios", "Publishing", "Broadcasting", "Entertainment"),
    "Government": ("Agency", "Authority", "Council", "Services", "Department"),
}
_NAME_ROOTS: tuple[str, ...] = (
    "Apex", "Bluewater", "Cedar", "Crescent", "Everpine", "Northwind", "Silverline", "Redwood",
    "Summit", "Harbor", "Ironbridge", "Lakeside", "Maple", "Orion", "Pinnacle", "Quarry",
    "Riverstone", "Sterling", "Trident", "Vanguard", "Westfield", "Zenith", "Aurora", "Beacon",
    "Cobalt", "Driftwood", "Ember", "Falcon", "Granite", "Highland", "Juniper", "Keystone",
    "Lumen", "Meridian", "Nimbus", "Oakridge", "Polaris", "Quantum", "Rosewood", "Sequoia",
    "Tidewater", "Unity", "Vertex", "Willow", "Yellowstone", "Alder", "Brightwater", "Clearview",
    "Dunmore", "Eastgate", "Foxglove", "Goldcrest", "Hawthorne", "Ivory", "Jasper", "Kingsley",
    "Larkspur", "Monarch", "Newhaven", "Osprey", "Prairie", "Radiant", "Stonegate", "Thistle",
)  # fmt: skip
SEGMENTS: tuple[str, ...] = ("SMB", "Mid-Market", "Enterprise")
_SEGMENT_WEIGHTS = (0.45, 0.35, 0.20)
_SEGMENT_EMPLOYEES = {"SMB": (20, 199), "Mid-Market": (200, 1999), "Enterprise": (2000, 60000)}

FIRST_NAMES: tuple[str, ...] = (
    "Ava", "Ben", "Chloe", "Daniel", "Elena", "Farid", "Grace", "Hiro", "Isabel", "Jonas",
    "Keira", "Liam", "Maya", "Noah", "Olivia", "Priya", "Quentin", "Rosa", "Samir", "Tara",
    "Umar", "Vera", "Wei", "Ximena", "Yusuf", "Zoe", "Amara", "Bruno", "Camila", "Dmitri",
    "Emeka", "Freya", "Gabriel", "Hana", "Ivan", "Julia", "Kenji", "Lucia", "Mateo", "Nadia",
)  # fmt: skip
LAST_NAMES: tuple[str, ...] = (
    "Anderson", "Becker", "Costa", "Dubois", "Eriksson", "Fernandez", "Garcia", "Hoffmann",
    "Ito", "Johansson", "Kowalski", "Lopez", "Martin", "Nakamura", "Okafor", "Patel", "Quinn",
    "Rossi", "Schmidt", "Tanaka", "Ueda", "Varga", "Williams", "Xu", "Yamamoto", "Zimmermann",
    "Novak", "Silva", "Murphy", "Khan", "Chen", "Mensah", "Larsen", "Moreau", "Haddad",
)  # fmt: skip
CONTACT_TITLES: tuple[str, ...] = (
    "CTO", "CFO", "VP Sales", "VP Operations", "Head of IT", "IT Director", "Procurement Manager",
    "Data Analyst", "Head of Analytics", "COO",
)  # fmt: skip
OWNER_TITLES: tuple[str, ...] = ("Account Executive", "Senior Account Executive", "Sales Manager")

# (name, category, list price, launched)
PRODUCTS: tuple[tuple[str, str, str, date], ...] = (
    ("Tandem Platform Starter", "Platform", "12000.00", date(2021, 3, 1)),
    ("Tandem Platform Enterprise", "Platform", "85000.00", date(2021, 3, 1)),
    ("Insight Analytics", "Analytics", "30000.00", date(2022, 1, 15)),
    ("Forecast AI", "Analytics", "45000.00", date(2023, 9, 1)),
    ("Data Connect", "Integration", "18000.00", date(2021, 11, 1)),
    ("Pipeline Sync", "Integration", "9000.00", date(2022, 6, 1)),
    ("Security Suite", "Security", "26000.00", date(2023, 2, 1)),
    ("Premium Support", "Services", "15000.00", date(2021, 3, 1)),
)
STAGES: tuple[str, ...] = (
    "Prospecting",
    "Qualification",
    "Proposal",
    "Negotiation",
    "Closed Won",
    "Closed Lost",
)
OPEN_STAGES: tuple[str, ...] = STAGES[:4]
LEAD_SOURCES: tuple[str, ...] = ("Inbound", "Outbound", "Partner", "Event", "Referral")
LOST_REASONS: tuple[str, ...] = ("Price", "Competitor", "No decision", "Timing", "Missing feature")
ACTIVITY_KINDS: tuple[str, ...] = ("Call", "Email", "Meeting", "Demo", "Note")
OUTCOMES: tuple[str, ...] = ("Positive", "Neutral", "Negative")
COMPETITORS: tuple[str, ...] = ("Brightmetrics", "Datavale", "Quorum CRM", "Salesgrid")
_CONCERNS: tuple[str, ...] = (
    "pricing for the second year",
    "data residency in the EU",
    "integration with their ERP",
    "onboarding time for the sales team",
    "single sign-on and audit logs",
    "forecast accuracy",
    "contract length",
    "support response times",
)
_NEXT_STEPS: tuple[str, ...] = (
    "send a revised quote",
    "schedule a technical deep dive",
    "share two customer references",
    "set up a pilot workspace",
    "loop in their procurement team",
    "prepare a security questionnaire",
    "book an executive sponsor call",
)


@dataclass(frozen=True)
class Region:
    """A sales region."""

    region_id: int
    code: str
    name: str


@dataclass(frozen=True)
class Owner:
    """A sales representative who owns accounts and opportunities."""

    owner_id: int
    full_name: str
    email: str
    title: str
    region_id: int
    hired_on: date
    active: bool


@dataclass(frozen=True)
class Company:
    """A customer or prospect account."""

    company_id: int
    name: str
    industry: str
    segment: str
    region_id: int
    country: str
    employee_count: int
    annual_revenue: Decimal
    website: str
    owner_id: int
    created_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True)
class Contact:
    """A person at a company."""

    contact_id: int
    company_id: int
    first_name: str
    last_name: str
    email: str
    title: str
    primary_contact: bool
    created_at: datetime


@dataclass(frozen=True)
class Product:
    """Something Tandem's demo vendor sells."""

    product_id: int
    name: str
    category: str
    list_price: Decimal
    launched_on: date
    active: bool


@dataclass(frozen=True)
class Opportunity:
    """A deal in the pipeline; closed deals carry ``closed_at``."""

    opportunity_id: int
    company_id: int
    owner_id: int
    product_id: int
    name: str
    stage: str
    amount: Decimal
    score: int
    lead_source: str
    created_at: datetime
    close_date: date
    closed_at: datetime | None
    lost_reason: str | None


@dataclass(frozen=True)
class Activity:
    """A logged touchpoint: a call, email, meeting, demo or note, with free-text notes."""

    activity_id: int
    company_id: int
    opportunity_id: int | None
    contact_id: int | None
    owner_id: int
    kind: str
    subject: str
    notes: str
    outcome: str
    duration_minutes: int | None
    occurred_at: datetime


@dataclass(frozen=True)
class DemoData:
    """The whole generated CRM."""

    seed: int
    anchor: date
    regions: tuple[Region, ...]
    owners: tuple[Owner, ...]
    companies: tuple[Company, ...]
    contacts: tuple[Contact, ...]
    products: tuple[Product, ...]
    opportunities: tuple[Opportunity, ...]
    activities: tuple[Activity, ...]


def _slug(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _at(day: date, rng: random.Random) -> datetime:
    """A business-hours instant on ``day`` (UTC, whole seconds)."""
    clock = time(rng.randint(8, 17), rng.randint(0, 59), rng.randint(0, 59))
    return datetime.combine(day, clock, tzinfo=UTC)


def _money(value: float) -> Decimal:
    return Decimal(f"{value:.2f}")


class _Builder:
    """Builds the tables in dependency order from one random stream."""

    def __init__(self, seed: int, anchor: date, company_count: int) -> None:
        self.rng = random.Random(seed)
        self.anchor = anchor
        self.start = anchor - timedelta(days=730)
        self.company_count = company_count

    def regions(self) -> tuple[Region, ...]:
        return tuple(Region(i + 1, code, name) for i, (code, name, _) in enumerate(REGIONS))

    def owners(self) -> tuple[Owner, ...]:
        rng, owners, used = self.rng, [], set()
        for owner_id in range(1, 21):
            while True:
                first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
                if (first, last) not in used:
                    used.add((first, last))
                    break
            region_id = rng.choices(range(1, len(REGIONS) + 1), REGION_WEIGHTS)[0]
            hired = self.start - timedelta(days=rng.randint(0, 1500)) + timedelta(days=300)
            owners.append(
                Owner(
                    owner_id=owner_id,
                    full_name=f"{first} {last}",
                    email=f"{first.lower()}.{last.lower()}@tandem-demo.example",
                    title=OWNER_TITLES[0 if owner_id % 5 else 2]
                    if owner_id % 3
                    else OWNER_TITLES[1],
                    region_id=region_id,
                    hired_on=min(hired, self.anchor - timedelta(days=30)),
                    active=owner_id % 9 != 0,
                )
            )
        return tuple(owners)

    def companies(self, owners: tuple[Owner, ...]) -> tuple[Company, ...]:
        rng, companies, names = self.rng, [], set()
        for company_id in range(1, self.company_count + 1):
            industry = rng.choice(INDUSTRIES)
            while True:
                name = f"{rng.choice(_NAME_ROOTS)} {rng.choice(_INDUSTRY_SUFFIXES[industry])}"
                if name not in names:
                    names.add(name)
                    break
            region_idx = rng.choices(range(len(REGIONS)), REGION_WEIGHTS)[0]
            segment = rng.choices(SEGMENTS, _SEGMENT_WEIGHTS)[0]
            low, high = _SEGMENT_EMPLOYEES[segment]
            employees = int(low * (high / low) ** rng.random())
            revenue = employees * rng.uniform(90_000, 260_000)
            in_region = [o for o in owners if o.region_id == region_idx + 1 and o.active]
            owner = rng.choice(in_region or [o for o in owners if o.active])
            created = _at(self.start + timedelta(days=rng.randint(0, 540)), rng)
            deleted = None
            if rng.random() < 0.04:
                deleted = _at(created.date() + timedelta(days=rng.randint(60, 180)), rng)
            companies.append(
                Company(
                    company_id=company_id,
                    name=name,
                    industry=industry,
                    segment=segment,
                    region_id=region_idx + 1,
                    country=rng.choice(REGIONS[region_idx][2]),
                    employee_count=employees,
                    annual_revenue=_money(revenue),
                    website=f"https://www.{_slug(name)}.example",
                    owner_id=owner.owner_id,
                    created_at=created,
                    deleted_at=deleted if deleted and deleted.date() < self.anchor else None,
                )
            )
        return tuple(companies)

    def contacts(self, companies: tuple[Company, ...]) -> tuple[Contact, ...]:
        rng = self.rng
        contacts: list[Contact] = []
        for company in companies:
            used: set[str] = set()
            for position in range(rng.randint(2, 5)):
                while True:
                    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
                    if f"{first}{last}" not in used:
                        used.add(f"{first}{last}")
                        break
                domain = company.website.removeprefix("https://www.")
                contacts.append(
                    Contact(
                        contact_id=len(contacts) + 1,
                        company_id=company.company_id,
                        first_name=first,
                        last_name=last,
                        email=f"{first.lower()}.{last.lower()}@{domain}",
                        title=rng.choice(CONTACT_TITLES),
                        primary_contact=position == 0,
                        created_at=company.created_at + timedelta(days=rng.randint(0, 90)),
                    )
                )
        return tuple(contacts)

    def products(self) -> tuple[Product, ...]:
        return tuple(
            Product(i + 1, name, category, Decimal(price), launched, name != "Pipeline Sync")
            for i, (name, category, price, launched) in enumerate(PRODUCTS)
        )

    def opportunities(
        self, companies: tuple[Company, ...], products: tuple[Product, ...]
    ) -> tuple[Opportunity, ...]:
        rng = self.rng
        opportunities: list[Opportunity] = []
        segment_factor = {"SMB": 0.35, "Mid-Market": 1.0, "Enterprise": 2.6}
        for company in companies:
            count = rng.randint(3, 21) if company.segment != "SMB" else rng.randint(1, 10)
            last_day = (company.deleted_at.date() if company.deleted_at else self.anchor) - (
                timedelta(days=1)
            )
            for _ in range(count):
                first_day = company.created_at.date()
                span = max((last_day - first_day).days, 1)
                created_day = first_day + timedelta(days=rng.randint(0, span))
                created = _at(created_day, rng)
                product = rng.choice(products)
                amount = (
                    float(product.list_price)
                    * segment_factor[company.segment]
                    * rng.lognormvariate(0, 0.35)
                )
                cycle = rng.randint(20, 160)
                expected_close = created_day + timedelta(days=cycle)
                closed = expected_close <= self.anchor and rng.random() < 0.93
                if closed:
                    won = rng.random() < (0.30 + 0.10 * SEGMENTS.index(company.segment))
                    stage = "Closed Won" if won else "Closed Lost"
                    close_day = min(expected_close + timedelta(days=rng.randint(-10, 25)), last_day)
                    close_day = max(close_day, created_day)
                    closed_at: datetime | None = _at(close_day, rng)
                    score = rng.randint(70, 100) if won else rng.randint(1, 45)
                    lost_reason = None if won else rng.choice(LOST_REASONS)
                else:
                    age = (self.anchor - created_day).days
                    stage = OPEN_STAGES[
                        min(age // 30, 3) if rng.random() < 0.7 else rng.randint(0, 3)
                    ]
                    close_day = max(
                        expected_close, self.anchor + timedelta(days=rng.randint(5, 120))
                    )
                    closed_at = None
                    score = min(100, 15 + 15 * OPEN_STAGES.index(stage) + rng.randint(0, 35))
                    lost_reason = None
                opportunities.append(
                    Opportunity(
                        opportunity_id=len(opportunities) + 1,
                        company_id=company.company_id,
                        owner_id=company.owner_id if rng.random() < 0.85 else rng.randint(1, 20),
                        product_id=product.product_id,
                        name=f"{company.name} - {product.name}",
                        stage=stage,
                        amount=_money(amount),
                        score=score,
                        lead_source=rng.choice(LEAD_SOURCES),
                        created_at=created,
                        close_date=close_day,
                        closed_at=closed_at,
                        lost_reason=lost_reason,
                    )
                )
        return tuple(opportunities)

    def activities(
        self,
        companies: tuple[Company, ...],
        contacts: tuple[Contact, ...],
        products: tuple[Product, ...],
        opportunities: tuple[Opportunity, ...],
    ) -> tuple[Activity, ...]:
        rng = self.rng
        activities: list[Activity] = []
        by_company: dict[int, list[Contact]] = {}
        for contact in contacts:
            by_company.setdefault(contact.company_id, []).append(contact)
        company_by_id = {c.company_id: c for c in companies}
        for opp in opportunities:
            end = opp.closed_at.date() if opp.closed_at else self.anchor
            span = max((end - opp.created_at.date()).days, 0)
            for _ in range(rng.randint(1, 5)):
                day = opp.created_at.date() + timedelta(days=rng.randint(0, span))
                contact = rng.choice(by_company[opp.company_id])
                product = products[opp.product_id - 1]
                activities.append(
                    self._activity(
                        len(activities) + 1,
                        company=company_by_id[opp.company_id],
                        opp=opp,
                        contact=contact,
                        product=product,
                        when=_at(day, rng),
                    )
                )
        return tuple(activities)

    def _activity(
        self,
        activity_id: int,
        *,
        company: Company,
        opp: Opportunity,
        contact: Contact,
        product: Product,
        when: datetime,
    ) -> Activity:
        rng = self.rng
        kind = rng.choices(ACTIVITY_KINDS, (0.35, 0.30, 0.15, 0.10, 0.10))[0]
        concern, step = rng.choice(_CONCERNS), rng.choice(_NEXT_STEPS)
        outcome = rng.choices(OUTCOMES, (0.45, 0.40, 0.15))[0]
        who = f"{contact.first_name} {contact.last_name} ({contact.title})"
        if kind == "Call":
            subject = f"Call with {contact.first_name} about {product.name}"
            notes = (
                f"Call notes: spoke with {who} at {company.name}. They asked about {concern}. "
                f"Mood was {outcome.lower()}. Next step: {step}."
            )
            if rng.random() < 0.25:
                notes += f" They are also evaluating {rng.choice(COMPETITORS)}."
        elif kind == "Email":
            subject = f"Follow-up on {product.name}"
            notes = f"Emailed {who} a summary of {product.name} and offered to {step}."
        elif kind == "Meeting":
            subject = f"{company.name} review meeting"
            notes = (
                f"Met {who} and their team. Main topic: {concern}. "
                f"Agreed to {step} before the next review."
            )
        elif kind == "Demo":
            subject = f"{product.name} demo"
            notes = f"Demoed {product.name} to {who}; questions focused on {concern}."
        else:
            subject = f"Account note: {company.name}"
            notes = f"Internal note: {company.industry} account, deal stage {opp.stage}; {step}."
        duration = rng.choice((15, 30, 45, 60)) if kind in ("Call", "Meeting", "Demo") else None
        return Activity(
            activity_id=activity_id,
            company_id=company.company_id,
            opportunity_id=opp.opportunity_id,
            contact_id=contact.contact_id,
            owner_id=opp.owner_id,
            kind=kind,
            subject=subject,
            notes=notes,
            outcome=outcome,
            duration_minutes=duration,
            occurred_at=when,
        )


def generate(
    seed: int = DEFAULT_SEED,
    anchor: date = ANCHOR_DATE,
    *,
    companies: int = DEFAULT_COMPANIES,
) -> DemoData:
    """The demo CRM for ``seed`` and ``anchor``; identical inputs give identical data."""
    if companies < 1 or companies > len(_NAME_ROOTS) * 5:
        raise ValueError(f"companies must be between 1 and {len(_NAME_ROOTS) * 5}")
    builder = _Builder(seed, anchor, companies)
    regions = builder.regions()
    owners = builder.owners()
    company_rows = builder.companies(owners)
    contacts = builder.contacts(company_rows)
    products = builder.products()
    opportunities = builder.opportunities(company_rows, products)
    activities = builder.activities(company_rows, contacts, products, opportunities)
    return DemoData(
        seed=seed,
        anchor=anchor,
        regions=regions,
        owners=owners,
        companies=company_rows,
        contacts=contacts,
        products=products,
        opportunities=opportunities,
        activities=activities,
    )
