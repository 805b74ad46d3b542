"""The demo CRM generator: deterministic, consistent, two years before the anchor."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.sql.demo import data as demo_data


@pytest.fixture(scope="module")
def data() -> demo_data.DemoData:
    return demo_data.generate()


def test_same_seed_same_data_other_seed_other_data(data):
    assert demo_data.generate() == data
    other = demo_data.generate(seed=1)
    assert other.companies != data.companies


def test_sizes(data):
    assert len(data.regions) == 4 and len(data.products) == 8 and len(data.owners) == 20
    assert 200 <= len(data.companies) <= 400
    assert len(data.contacts) >= 2 * len(data.companies)
    assert len(data.opportunities) >= 2000
    assert len(data.activities) >= 5000


def test_keys_are_consistent(data):
    companies = {c.company_id for c in data.companies}
    owners = {o.owner_id for o in data.owners}
    contacts = {c.contact_id: c.company_id for c in data.contacts}
    assert len({c.name for c in data.companies}) == len(data.companies)
    for opp in data.opportunities:
        assert opp.company_id in companies and opp.owner_id in owners
        assert 0 <= opp.score <= 100 and opp.amount > 0
    for activity in data.activities:
        assert activity.company_id in companies
        assert contacts[activity.contact_id] == activity.company_id


def test_everything_happens_in_the_two_years_before_the_anchor(data):
    start = data.anchor - timedelta(days=730)
    for opp in data.opportunities:
        assert start <= opp.created_at.date() <= data.anchor
        closed = opp.stage in ("Closed Won", "Closed Lost")
        assert closed == (opp.closed_at is not None)
        if closed:
            assert opp.close_date <= data.anchor
        else:
            assert opp.close_date > data.anchor
        assert (opp.lost_reason is not None) == (opp.stage == "Closed Lost")
    assert all(start <= a.occurred_at.date() <= data.anchor for a in data.activities)


def test_vocabulary_is_the_published_one(data):
    assert {c.industry for c in data.companies} <= set(demo_data.INDUSTRIES)
    assert {o.stage for o in data.opportunities} == set(demo_data.STAGES)
    assert {a.kind for a in data.activities} == set(demo_data.ACTIVITY_KINDS)
    assert any("Call notes:" in a.notes for a in data.activities)


def test_company_count_is_bounded():
    with pytest.raises(ValueError):
        demo_data.generate(companies=0)
    assert len(demo_data.generate(companies=5).companies) == 5
