"""The language of a question: another language told by name, and no English question
(short ones and names included) ever called foreign — measured on every development
question the project has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.common import (
    ENGLISH,
    Language,
    detect_language,
    document_language,
    english_only_message,
)
from services.common import _language as language_module

DATASETS = Path(__file__).resolve().parents[3].parent / "shared" / "datasets"
DEV_SETS = ("sql", "sql-spider", "qa")

# The three, and the other languages people ask in.
FOREIGN = [
    ("Welches Produkt hat die größte Gesamtmenge?", "de"),
    ("Wie viele Bestellungen gibt es?", "de"),
    ("Lösche alle stornierten Bestellungen", "de"),
    ("Quel produit a la plus grande quantité totale ?", "fr"),
    ("Combien de commandes y a-t-il ?", "fr"),
    ("合計数量が最も多い製品はどれですか\uff1f", "ja"),
    ("注文は何件ありますか", "ja"),
    ("¿Cuántos pedidos hay?", "es"),
    ("Quanti ordini ci sono?", "it"),
    ("Hoeveel bestellingen zijn er?", "nl"),
    ("Hur många ordrar finns det?", "sv"),
    ("Ile jest zamówień?", "pl"),
    ("Сколько всего заказов?", "ru"),
    ("客户数量是多少", "zh"),
    ("고객 수", "ko"),
]

# Short English questions, requests, SQL and names (of companies and places in other
# languages) carry little evidence: every one must read as English.
ENGLISH_TEXTS = [
    "How many orders?",
    "Count orders",
    "Top 5 customers",
    "List singers",
    "avg price",
    "sum(amount) per month",
    "hi",
    "thanks",
    "Delete all cancelled orders",
    "Pipeline per rep",
    "Win rate by quarter",
    "Mean age per dept",
    "JFK to ORD flights",
    "Show Müller's orders",
    "Orders from München",
    "How many customers in Düsseldorf?",
    "Orders by Société Générale",
    "Deals with Deutsche Bank AG",
    "Contacts at Nestlé",
    "Sales in São Paulo",
    "Sales at Banco do Brasil",
    "Revenue for Crédit Agricole",
    "Volkswagen Konzern orders",
    "Zürich Versicherung contracts",
    "Jean-Pierre Dubois orders",
    "El Corte Inglés contacts",
    "Banco de la Nación Argentina",
    "Müller und Söhne",
    "Ada Lovelace",
    "DELETE FROM orders WHERE status = 'cancelled'",
    "SELECT count(*) FROM orders",
    "1234",
    "",
]


@pytest.mark.parametrize(("question", "code"), FOREIGN)
def test_another_language_is_told_by_its_code_and_name(question: str, code: str) -> None:
    language = detect_language(question)
    assert language.code == code and not language.english
    assert str(language) == f"{language.name} ({code})"


@pytest.mark.parametrize("text", ENGLISH_TEXTS)
def test_short_english_questions_and_names_read_as_english(text: str) -> None:
    assert detect_language(text) == ENGLISH


@pytest.mark.skipif(not (DATASETS / "sql").exists(), reason="the dev sets are not checked out")
def test_no_development_question_is_called_foreign() -> None:
    """Every question of the three dev sets is English: the false non-English count is 0
    (981 questions; only the count is looked at, never a blind-half question)."""
    questions = [
        json.loads(line)["question"]
        for name in DEV_SETS
        for line in (DATASETS / name / "questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    assert len(questions) >= 900
    foreign = sum(1 for q in questions if not detect_language(q).english)
    assert foreign == 0


def test_an_english_word_settles_a_question_without_the_model(monkeypatch) -> None:
    """Most English questions hold a word only English writes: they never load or run
    the model (about a second to load, on a service's first question)."""

    def no_model(text: str) -> list[tuple[str, float]]:
        raise AssertionError("the model was consulted")

    monkeypatch.setattr(language_module, "_rank", no_model)
    assert detect_language("Which bratwurst und sauerkraut orders are open?") == ENGLISH
    assert detect_language("How many Bestellungen are there?") == ENGLISH


def test_the_refusal_names_the_language_and_what_reads_it() -> None:
    message = english_only_message(detect_language("Wie viele Bestellungen gibt es?"))
    assert "reads English" in message and "German (de)" in message
    assert "GEMINI_API_KEY" in message


@pytest.mark.parametrize(
    ("text", "code"),
    [
        # a German manual that quotes English words is German, not English
        (
            "Die Konfigurationsdatei liegt unter /etc/ssh. Der Dienst liest sie beim Start; "
            "mit the option Port wird der Port gesetzt, standardmäßig 22.",
            "de",
        ),
        ("Le démon cron exécute les tâches planifiées de chaque utilisateur.", "fr"),
        ("パッケージの一覧を更新するには apt update を実行します。", "ja"),
        ("Backups run every night and are kept for thirty days.", "en"),
    ],
)
def test_a_documents_language_is_told_from_its_text(text: str, code: str) -> None:
    language = document_language(text)
    assert language is not None and language.code == code


def test_a_document_that_says_too_little_has_no_language() -> None:
    assert document_language("22 80 443 587") is None
    assert document_language("") is None


def test_a_documents_language_reads_a_bounded_sample() -> None:
    """However long the document, the model reads its opening only."""
    seen: list[int] = []

    def rank(text: str) -> list[tuple[str, float]]:
        seen.append(len(text))
        return [("de", 0.9), ("en", 0.1)]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(language_module, "_rank", rank)
        assert document_language("Die Datei " * 100_000) == Language("de", "German", 0.9)
    assert seen == [language_module.DOCUMENT_SAMPLE_CHARS]
