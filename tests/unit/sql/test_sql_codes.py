"""Which columns store the codes of one ISO 3166 system, decided from the stored values
alone, and the places those codes stand for."""

from __future__ import annotations

from services.sql.catalog import CodeSystem, code_system, place_names


def test_a_column_of_state_codes_is_one_countrys_subdivisions() -> None:
    states = ["CA", "FL", "NJ", "NY", "TX"]
    assert code_system(states) == CodeSystem("subdivision", "US")
    names = place_names(states)
    assert names["new jersey"] == ("NJ", CodeSystem("subdivision", "US"))
    assert names["texas"][0] == "TX"
    assert "oregon" not in names  # a place whose code is not stored gets no name


def test_country_codes_in_either_length() -> None:
    assert code_system(["US", "CA", "FR", "GB", "AU"]) == CodeSystem("alpha_2")
    assert place_names(["US", "AU", "KR", "FR"])["south korea"][0] == "KR"
    assert place_names(["USA", "GBR", "FRA"])["united states"][0] == "USA"


def test_one_stray_value_is_tolerated_but_words_are_no_codes() -> None:
    # nine state codes and a city typed into the state column
    nine = ["CA", "CT", "IL", "MA", "MD", "MI", "NC", "NY", "PA", "San Francisco"]
    assert code_system(nine) == CodeSystem("subdivision", "US")
    assert code_system(["active", "inactive", "suspended", "closed"]) is None
    assert code_system(["CA", "NY", "TX", "pending", "shipped"]) is None  # mixed words


def test_ordinary_two_letter_words_are_no_codes() -> None:
    assert code_system(["no", "ok", "is", "it"]) is None  # lower-case words
    assert code_system(["NO", "OK", "IS"]) is None  # no one system holds them all
    assert place_names(["ON", "OFF", "NA"]) == {}


def test_codes_two_systems_share_alike_or_too_few_decide_nothing() -> None:
    assert code_system(["CA", "DE", "IN"]) is None  # countries and US states alike
    assert code_system(["US", "FR"]) is None  # too few to say
    airlines = ["9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL", "HA", "MQ", "UA", "US"]
    assert code_system(airlines) is None
