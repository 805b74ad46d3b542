"""Which question words "type", "kind" and "way" are topic words: scaffold after
"what"/"which" ("what kind of …") or inside a hyphenated name ("--exclude-type"),
elsewhere what the question asks about ("the type of each file system", "which content
type"). On real text: shared-mime-info's specification (2.2, section 2.14, as its PDF
holds it), asked in other words than the dev set's."""

from __future__ import annotations

from services.common.llm import Passage
from services.router.offline._extractive import question_terms, synthesize

VOLUMES = Passage(
    "1",
    "Traditional MIME types apply to individual files or bytestreams. It is often useful to "
    "apply the same methodologies when classifying the content of mountable volumes or "
    "filesystems. The x-content type has been introduced for this purpose. Typical "
    "examples are x-content/audio-dvd, x-content/blank-cd or x-content/image-dcf.",
    "Shared MIME-info Database",
    0.1,
)


def test_kind_words_are_scaffold_only_after_what_or_which() -> None:
    assert "type" not in question_terms("What type of media does it read?")
    assert "kinds" not in question_terms("Which kinds of volumes are there?")
    assert "type" not in question_terms("What does df's --exclude-type do?")
    assert "type" in question_terms("Which df option shows the type of each file system?")
    assert "type" in question_terms("Which content type classifies a mounted volume?")


def test_a_question_about_a_type_is_answered_by_the_type() -> None:
    answer = synthesize(
        "Which content type was introduced to classify mountable volumes?",
        [VOLUMES],
        (),
        False,
    )
    assert answer.supported
    assert "The x-content type has been introduced for this purpose." in answer.text
