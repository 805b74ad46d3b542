"""Redaction: secrets by shape and by context, personal data per policy, no false alarms."""

from __future__ import annotations

import pytest

from services.common import SettingsError
from services.retrieval import (
    PERSONAL_KINDS,
    AllowList,
    RedactionKind,
    RedactionPolicy,
    Redactor,
    RetrievalSettings,
    looks_like_secret_token,
)
from services.retrieval._redact import has_content

K = RedactionKind


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        ("key AKIAIOSFODNN7EXAMPLE here", "key [API_KEY] here", K.API_KEY),
        ("sk-proj-abcdefghijklmnopqrstuvwxyz123456", "[API_KEY]", K.API_KEY),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[API_KEY]", K.API_KEY),
        ("stripe sk_live_abcdefghijklmnop1234", "stripe [API_KEY]", K.API_KEY),
        ("slack xoxb-1234567890-abcdefghij", "slack [API_KEY]", K.API_KEY),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n",
            "jwt [API_KEY]",
            K.API_KEY,
        ),
        ("Authorization: Bearer abcdefghijklmnop1234567890", "Authorization: Bearer [API_KEY]",
         K.API_KEY),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter",
         "[PRIVATE_KEY]\nafter", K.PRIVATE_KEY),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk", "[PRIVATE_KEY]", K.PRIVATE_KEY),
        ("password: hunter2 then text", "password: [LABELED_SECRET] then text",
         K.LABELED_SECRET),
        ("DB_PASSWORD=s3cr3t!", "DB_PASSWORD=[LABELED_SECRET]", K.LABELED_SECRET),
        ('{"api_key": "abc def"}', '{"api_key": "[LABELED_SECRET]"}', K.LABELED_SECRET),
        ("client_secret = 'x y z'", "client_secret = '[LABELED_SECRET]'", K.LABELED_SECRET),
        ("postgres://admin:Sup3r@db:5432/crm", "postgres://[CONNECTION_STRING]@db:5432/crm",
         K.CONNECTION_STRING),
        ("random Zx8kQ2pLm9Rt4vWy7Bn3Hj6F here", "random [HIGH_ENTROPY_TOKEN] here",
         K.HIGH_ENTROPY_TOKEN),
        ("mail jane.doe@example.co.uk now", "mail [EMAIL_ADDRESS] now", K.EMAIL_ADDRESS),
        ("call +1 415 555 0134", "call [PHONE_NUMBER]", K.PHONE_NUMBER),
        ("call (415) 555-0199.", "call [PHONE_NUMBER].", K.PHONE_NUMBER),
        ("card 4111 1111 1111 1111", "card [CARD_NUMBER]", K.CARD_NUMBER),
        ("ssn 123-45-6789", "ssn [NATIONAL_ID]", K.NATIONAL_ID),
        ("iban DE89 3704 0044 0532 0130 00", "iban [BANK_ACCOUNT]", K.BANK_ACCOUNT),
        ("host 10.0.12.7 up", "host [IP_ADDRESS] up", K.IP_ADDRESS),
        ("route via 93.184.216.34. Then", "route via [IP_ADDRESS]. Then", K.IP_ADDRESS),
        ("3 hops: 10.1.2.3 then out", "3 hops: [IP_ADDRESS] then out", K.IP_ADDRESS),
        ("v6 fe80::1ff:fe23:4567:890a", "v6 [IP_ADDRESS]", K.IP_ADDRESS),
    ],
)  # fmt: skip
def test_each_kind_is_found_and_replaced_by_its_placeholder(text, expected, kind):
    redacted = Redactor().redact(text)
    assert redacted.text == expected
    assert redacted.counts == {kind: 1}


@pytest.mark.parametrize(
    "text",
    [
        "Ticket INC-48213 opened on 2024-05-01 at 13:45.",
        "uuid 3f2a9c1e-1b2c-4d5e-8f90-123456789abc and commit 9fceb02d0ae598e95dc970b74767f1",
        "See services/retrieval/eval_data/corpus.jsonl and My_Config_Value_2024_Final.",
        "ThisIsACamelCaseIdentifier2 and k8sNodePool2024ProductionEuropeWest1",
        "Password policy: minimum 12 characters. max_tokens: 100",
        "Card-like 4111 1111 1111 1112 fails the Luhn check; 999-99-9999 is no SSN.",
        "Version 10.0 of release 2024.05 and 300.1.2.3 are not addresses.",
        "Revenue grew 12% to $4,500,000 in Q3 2024.",
        # Dotted quads that are not addresses: masks, versions, object identifiers,
        # section numbers (a manual's netmask once became [IP_ADDRESS]).
        "netmask 255.255.255.0, prefix 255.255.240.0, wildcard 0.0.0.255, listen on 0.0.0.0",
        "glibc v2.36.0.1, version 5.10.0.1, libfoo-1.2.3.4.tar.gz and 1.2.3.4-2+deb12u1",
        "OID 2.5.4.3 is the common name; id-at-serialNumber (2.5.4.5) its serial.",
        "3.2.1.4 Routing tables\nThe next part.",
        "Git 1.7.12 fixed it; Git 1.7.12.1 Release Notes follow.",
        # ISO 6709 coordinates (zone1970.tab) once came back as [PHONE_NUMBER].
        "US\t+394421-1045903\tAmerica/Denver and +4230+00131 Andorra, +0519-00402",
        # Addresses that name no one: loopback, multicast, documentation examples.
        "connect to 127.0.0.1:9229 or ::1, join 224.0.0.251, e.g. 192.0.2.10 or 2001:db8::7",
    ],
)
def test_ordinary_text_is_left_alone(text):
    redacted = Redactor().redact(text)
    assert (redacted.text, redacted.counts) == (text, {})


def test_kept_personal_kinds_stay_verbatim_but_secrets_never_do():
    text = "jane@example.com, +1 415 555 0134, password: x1, AKIAIOSFODNN7EXAMPLE"
    redacted = Redactor(frozenset({K.EMAIL_ADDRESS})).redact(text)
    assert redacted.text == (
        "jane@example.com, [PHONE_NUMBER], password: [LABELED_SECRET], [API_KEY]"
    )
    assert redacted.counts == {K.API_KEY: 1, K.LABELED_SECRET: 1, K.PHONE_NUMBER: 1}
    with pytest.raises(ValueError, match="secret kinds"):
        Redactor(frozenset({K.API_KEY}))
    assert Redactor(frozenset(PERSONAL_KINDS)).redact("jane@example.com").counts == {}


def test_overlaps_go_to_the_most_specific_detector():
    block = "-----BEGIN PRIVATE KEY-----\nZx8kQ2pLm9Rt4vWy7Bn3Hj6F\n-----END PRIVATE KEY-----"
    assert Redactor().redact(block).counts == {K.PRIVATE_KEY: 1}
    assert Redactor().redact("api_key: AKIAIOSFODNN7EXAMPLE").counts == {K.API_KEY: 1}
    url = "https://bob:pw@host/x mail bob@example.com"
    assert Redactor().redact(url).counts == {K.CONNECTION_STRING: 1, K.EMAIL_ADDRESS: 1}


def test_counts_add_up_per_kind():
    redacted = Redactor().redact("a@example.com b@example.com 10.0.0.1")
    assert redacted.counts == {K.EMAIL_ADDRESS: 2, K.IP_ADDRESS: 1}


def test_secret_token_shape():
    assert looks_like_secret_token("aGVsbG8gd29ybGQgdGhpcyBpcyBhIHNlY3JldCB2YWx1ZQ==")
    assert not looks_like_secret_token("short1A")
    assert not looks_like_secret_token("0123456789abcdef0123456789abcdef")  # hex digest


def test_has_content_ignores_placeholders_and_markup():
    assert not has_content("[API_KEY] --- [EMAIL_ADDRESS]\n***")
    assert has_content("[API_KEY] is rotated monthly")


POLICY = (
    "Write to support@acme.com or help@eu.acme.com, call +1 (800) 555-0100. "
    "Jane's own address is jane.doe@gmail.com and her mobile is +44 7700 900123. "
    "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"
)


def test_the_allow_list_keeps_the_companys_own_contacts_and_nothing_else():
    allow = AllowList.parse("acme.com, +1 800 555 0100")
    redacted = Redactor(allow=allow).redact(POLICY)
    assert "support@acme.com" in redacted.text and "help@eu.acme.com" in redacted.text
    assert "+1 (800) 555-0100" in redacted.text
    # Someone else's address and number, and every secret, are still redacted.
    assert "gmail" not in redacted.text and "7700" not in redacted.text
    assert "ghp_" not in redacted.text
    assert redacted.counts == {K.EMAIL_ADDRESS: 1, K.PHONE_NUMBER: 1, K.API_KEY: 1}


def test_allow_list_entries_are_domains_numbers_or_values_and_short_ones_are_refused():
    allow = AllowList.parse(" @Acme.COM , 800-555-0100, DE89 3704 0044 0532 0130 00 ,")
    assert allow.domains == {"acme.com"} and allow.numbers == {"8005550100"}
    assert allow.values == {"de89 3704 0044 0532 0130 00"}
    assert not allow.permits(K.EMAIL_ADDRESS, "x@notacme.com")
    assert not allow.permits(K.API_KEY, "acme.com")  # secrets are never allowed
    with pytest.raises(ValueError, match="too short"):
        AllowList.parse("555")


def test_a_category_keeps_its_own_kinds_on_top_of_the_calls():
    policy = RedactionPolicy(
        frozenset(), by_category={"policy": frozenset({K.EMAIL_ADDRESS, K.PHONE_NUMBER})}
    )
    public = policy.for_category("policy").redact(POLICY)
    private = policy.for_category("call_note").redact(POLICY)
    assert "jane.doe@gmail.com" in public.text and "token: [API_KEY]" in public.text
    assert "jane.doe@gmail.com" not in private.text
    assert policy.for_category("policy") is policy.for_category("policy")


def test_settings_read_the_allow_list_and_category_policies_naming_bad_values():
    settings = RetrievalSettings.from_env(
        {
            "RETRIEVAL_REDACTION_ALLOW": "acme.com",
            "RETRIEVAL_REDACTION_KEEP_BY_CATEGORY": (
                "policy=EMAIL_ADDRESS,PHONE_NUMBER; faq=EMAIL_ADDRESS"
            ),
        }
    )
    assert settings.redaction_allow.domains == {"acme.com"}
    assert settings.keep_by_category == {
        "policy": frozenset({K.EMAIL_ADDRESS, K.PHONE_NUMBER}),
        "faq": frozenset({K.EMAIL_ADDRESS}),
    }
    with pytest.raises(SettingsError, match="KEEP_BY_CATEGORY lists 'API_KEY'"):
        RetrievalSettings.from_env({"RETRIEVAL_REDACTION_KEEP_BY_CATEGORY": "x=API_KEY"})
    with pytest.raises(SettingsError, match="is not CATEGORY=KIND"):
        RetrievalSettings.from_env({"RETRIEVAL_REDACTION_KEEP_BY_CATEGORY": "policy"})
    with pytest.raises(SettingsError, match="RETRIEVAL_REDACTION_ALLOW: '55' is too short"):
        RetrievalSettings.from_env({"RETRIEVAL_REDACTION_ALLOW": "55"})
