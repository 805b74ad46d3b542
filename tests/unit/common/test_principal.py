"""Principal headers: what a caller may send and what is refused, naming the header.

The headers are a claim about a person; a malformed one must never be read as a
different (or no) person, so every ambiguity is refused rather than guessed at."""

from __future__ import annotations

from typing import Any

import pytest

from services.common import (
    ATTRIBUTES_HEADER,
    GROUPS_HEADER,
    PRINCIPAL_HEADER,
    InvalidArgument,
    Principal,
    parse_principal,
)
from services.common._principal import MAX_ENCODED_CHARS


def _refused(metadata: Any) -> tuple[str, str, str]:
    """(reason, the field named, its description) of the refusal."""
    with pytest.raises(InvalidArgument) as caught:
        parse_principal(metadata)
    (violation,) = caught.value.violations
    return caught.value.reason, violation.field, violation.description


def test_no_principal_headers_name_nobody() -> None:
    assert parse_principal(None) is None
    assert parse_principal([]) is None
    assert parse_principal([("authorization", "Bearer x"), ("x-other", "alice")]) is None


def test_the_three_headers_name_one_principal() -> None:
    found = parse_principal(
        [
            (PRINCIPAL_HEADER, "alice"),
            (GROUPS_HEADER, "sales, emea"),
            (ATTRIBUTES_HEADER, "region=EMEA&tier=gold"),
        ]
    )
    assert found == Principal.of("alice", {"sales", "emea"}, {"region": "EMEA", "tier": "gold"})
    assert found is not None and found.attribute("region") == "EMEA"
    assert found.attribute("missing") is None


def test_values_are_percent_decoded_utf8_and_round_trip_through_the_canonical_headers() -> None:
    found = parse_principal(
        [
            (PRINCIPAL_HEADER, "J%C3%BCrgen"),
            # A comma inside a group name travels encoded; a raw one separates groups.
            (GROUPS_HEADER, "r%26d%2Cwest,sales"),
            # Form encoding: + is a space, and & and = inside a value are encoded.
            (ATTRIBUTES_HEADER, "city=S%C3%A3o+Paulo&note=a%3Db%26c"),
        ]
    )
    assert found == Principal.of(
        "Jürgen", {"r&d,west", "sales"}, {"city": "São Paulo", "note": "a=b&c"}
    )
    # What the gateway forwards and signs parses back to the same principal.
    assert parse_principal(found.headers()) == found
    assert all(value.isascii() for _, value in found.headers())


def test_canonical_form_ignores_group_and_attribute_order() -> None:
    one = parse_principal([(PRINCIPAL_HEADER, "bob"), (GROUPS_HEADER, "b,a"),
                           (ATTRIBUTES_HEADER, "y=2&x=1")])  # fmt: skip
    two = parse_principal([(PRINCIPAL_HEADER, "bob"), (GROUPS_HEADER, "a,b"),
                           (ATTRIBUTES_HEADER, "x=1&y=2")])  # fmt: skip
    assert one == two and one is not None and two is not None
    assert one.canonical() == two.canonical()
    assert hash(one) == hash(two)


def test_binary_metadata_values_are_read_as_ascii() -> None:
    assert parse_principal([(PRINCIPAL_HEADER, b"carol")]) == Principal.of("carol")


@pytest.mark.parametrize("header", [PRINCIPAL_HEADER, GROUPS_HEADER, ATTRIBUTES_HEADER])
def test_a_header_sent_twice_is_refused_naming_it(header: str) -> None:
    value = {"x-tandem-principal": "alice", GROUPS_HEADER: "a", ATTRIBUTES_HEADER: "k=v"}[header]
    metadata = [(PRINCIPAL_HEADER, "alice"), (header, value), (header, value)]
    if header == PRINCIPAL_HEADER:
        metadata = metadata[1:]
    assert _refused(metadata)[:2] == ("PRINCIPAL_INVALID", header)


@pytest.mark.parametrize(
    "metadata",
    [
        [(GROUPS_HEADER, "hr")],
        [(ATTRIBUTES_HEADER, "region=EMEA")],
        [(GROUPS_HEADER, "hr"), (ATTRIBUTES_HEADER, "region=EMEA")],
    ],
)
def test_groups_or_attributes_without_an_id_name_nobody_and_are_refused(metadata: Any) -> None:
    reason, header, description = _refused(metadata)
    assert (reason, header) == ("PRINCIPAL_INVALID", PRINCIPAL_HEADER)
    assert "required" in description


@pytest.mark.parametrize(
    ("metadata", "header"),
    [
        ([(PRINCIPAL_HEADER, "")], PRINCIPAL_HEADER),
        ([(PRINCIPAL_HEADER, "%20%20")], PRINCIPAL_HEADER),
        ([(PRINCIPAL_HEADER, "a" * 257)], PRINCIPAL_HEADER),
        ([(PRINCIPAL_HEADER, "al%00ice")], PRINCIPAL_HEADER),
        ([(PRINCIPAL_HEADER, "%FF%FE")], PRINCIPAL_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (GROUPS_HEADER, "sales,,hr")], GROUPS_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (GROUPS_HEADER, "g" * 129)], GROUPS_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (GROUPS_HEADER, ",".join(f"g{i}" for i in range(65)))],
         GROUPS_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (GROUPS_HEADER, "hr%0A")], GROUPS_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (GROUPS_HEADER, "%C3")], GROUPS_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "region")], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "1region=x")], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "re-gion=x")], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "=x")], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "region=a&region=b")], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "k=" + "v" * 257)], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"),
          (ATTRIBUTES_HEADER, "&".join(f"k{i}=v" for i in range(33)))], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "k=%07")], ATTRIBUTES_HEADER),
        ([(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "k=%FF")], ATTRIBUTES_HEADER),
    ],
)  # fmt: skip
def test_a_malformed_header_is_refused_naming_it(metadata: Any, header: str) -> None:
    assert _refused(metadata)[:2] == ("PRINCIPAL_INVALID", header)


def test_the_limits_themselves_are_accepted() -> None:
    for metadata in (
        [(PRINCIPAL_HEADER, "a" * 256), (GROUPS_HEADER, "g" * 128)],
        [(PRINCIPAL_HEADER, "a"), (GROUPS_HEADER, ",".join(f"g{i}" for i in range(64)))],
        [(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "&".join(f"k{i}=v" for i in range(32)))],
        [(PRINCIPAL_HEADER, "a"), (ATTRIBUTES_HEADER, "k=" + "v" * 256)],
    ):
        assert parse_principal(metadata) is not None, metadata


def _sized(total: int) -> list[tuple[str, str]]:
    """Headers of ``total`` characters as ``MAX_ENCODED_CHARS`` counts them."""
    fixed = [(PRINCIPAL_HEADER, "a" * 200), (ATTRIBUTES_HEADER, "k=" + "v" * 100)]
    used = sum(len(n) + len(v) + 2 for n, v in fixed) + len(GROUPS_HEADER) + 2
    groups: list[str] = []
    left = total - used
    while left > 0:
        size = min(left - (1 if groups else 0), 128)
        groups.append(f"{len(groups):03}" + "g" * (size - 3))
        left -= size + (1 if len(groups) > 1 else 0)
    return [*fixed, (GROUPS_HEADER, ",".join(groups))]


def test_the_headers_together_stay_within_what_an_internal_hop_carries() -> None:
    # gRPC refuses metadata past 8 KiB, and an internal call carries the principal twice
    # (headers, and the tenant token): a principal within every per-field limit but
    # larger in all was once admitted by the gateway and refused by the next hop.
    at = _sized(MAX_ENCODED_CHARS)
    assert sum(len(n) + len(v) + 2 for n, v in at) == MAX_ENCODED_CHARS
    assert parse_principal(at) is not None
    reason, header, description = _refused(_sized(MAX_ENCODED_CHARS + 1))
    assert (reason, header) == ("PRINCIPAL_INVALID", GROUPS_HEADER)
    assert str(MAX_ENCODED_CHARS) in description
    # Counted as forwarded: characters that travel percent-encoded count three times.
    wide = [(PRINCIPAL_HEADER, "%C3%A9" * 200), (ATTRIBUTES_HEADER, "k=" + "%C3%A9" * 250)]
    assert _refused(wide)[:2] == ("PRINCIPAL_INVALID", ATTRIBUTES_HEADER)


def test_blank_groups_and_attributes_headers_add_nothing() -> None:
    assert parse_principal(
        [(PRINCIPAL_HEADER, "dave"), (GROUPS_HEADER, " "), (ATTRIBUTES_HEADER, "")]
    ) == Principal.of("dave")


def test_principal_of_checks_like_the_headers() -> None:
    with pytest.raises(InvalidArgument) as caught:
        Principal.of("ok", attributes={"not a name": "x"})
    assert caught.value.violations[0].field == ATTRIBUTES_HEADER
    with pytest.raises(InvalidArgument):
        Principal.of(" ")
