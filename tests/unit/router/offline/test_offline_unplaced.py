"""What a document refusal names (``unplaced``): the question's words that no passage
found holds, as the question writes them; never a word a passage holds, by its stem, a
synonym, a one-typo variant or inside a longer word. On real man-page text (bzip2 and
sed, ``tests/manpages``) and df(1) as the dev set's slides hold it."""

from __future__ import annotations

from services.common.llm import Passage
from services.router.offline._extractive import unplaced, unplaced_note
from tests.manpages import BZIP2_OPTIONS, SED_OPTIONS
from tests.unit.router.offline.test_offline_unit_choice import DF_DESCRIPTION

MANUALS = (Passage("1", BZIP2_OPTIONS, "bzip2(1)"), Passage("2", SED_OPTIONS, "sed(1)"))


def test_absent_neighbouring_words_are_one_phrase_in_the_questions_order() -> None:
    question = "How does sed calibrate the flux capacitor?"
    assert unplaced(question, MANUALS) == ("calibrate", "flux capacitor")
    assert unplaced_note(question, MANUALS) == (
        'The passages found do not mention "calibrate" or "flux capacitor".'
    )


def test_a_word_held_in_another_form_is_never_named() -> None:
    # "compresses" (compression), "decompressing" (decompress), "kept" is not "keep"
    # but "keeping" is; "Decompresion" is one typo from "decompression".
    assert unplaced("Does bzip2 keep files when decompressing?", MANUALS) == ()
    assert unplaced("Is Decompresion forced by a flag?", MANUALS) == ()
    assert unplaced("Which option suppresses the printing?", MANUALS) == ()


def test_a_word_held_inside_a_longer_one_is_never_named() -> None:
    # "mount" only in "mounted"/"unmounted", "portable" only in "nonportable": held,
    # though no word of the passage is either.
    assert unplaced("Can df mount a file system?", (DF_DESCRIPTION,)) == ()
    assert unplaced("Is df portable?", (DF_DESCRIPTION,)) == ()


def test_a_comparative_or_adverb_is_held_by_its_base() -> None:
    # "slower" by "slows", "more intimately" by "intimate"; "faster" is not held.
    passage = Passage("1", "Running under the tool slows a program down.", "bbv")
    assert unplaced("How much slower is a program under the tool?", (passage,)) == ()
    assert unplaced("Does df know the structures intimately?", (DF_DESCRIPTION,)) == ()
    assert unplaced("Is it faster?", (passage,)) == ("faster",)


def test_nothing_is_named_when_every_word_is_held_or_nothing_was_found() -> None:
    question = "Does sed edit files in place?"
    assert unplaced_note(question, MANUALS) is None
    assert unplaced_note("How does sed calibrate the flux capacitor?", ()) is None


def test_at_most_three_phrases_are_named() -> None:
    question = "Does sed parse yaml, toml, json or protobuf files?"
    assert unplaced(question, MANUALS) == ("parse yaml", "toml", "json")
