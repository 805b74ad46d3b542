"""A confident guess is refused (``unfounded``): when the passages found lack more of
the question's words than the best unit says, the offline engine states no sentence
and the refusal names what is missing. A paraphrased question, a word or two of it in
other words than its passage, keeps its answer. On real man-page text (bzip2 and sed,
``tests/manpages``)."""

from __future__ import annotations

from services.common.llm import Passage
from services.router.offline._extractive import NO_ANSWER, synthesize, unplaced_note
from tests.manpages import BZIP2_OPTIONS, SED_OPTIONS

MANUALS = (Passage("1", BZIP2_OPTIONS, "bzip2(1)"), Passage("2", SED_OPTIONS, "sed(1)"))


def test_an_answer_sharing_only_the_questions_common_words_is_refused() -> None:
    # sed(1) says "option" (every option line) and "sed", never a warp drive or a speed:
    # the best unit says two of the question's five words, three are nowhere.
    question = "Which sed option sets the warp drive speed?"
    answer = synthesize(question, MANUALS, (), False)
    assert not answer.supported
    assert [s.text for s in answer.sentences] == [NO_ANSWER]
    assert unplaced_note(question, MANUALS) == (
        'The passages found do not mention "sets" or "warp drive speed".'
    )


def test_a_paraphrased_question_keeps_its_answer() -> None:
    # "preserves" and "original" are nowhere in the passages; the -k line says
    # "files", "decompression" and "option" (its kind): as many as are missing.
    answer = synthesize(
        "Which bzip2 option preserves the original files during decompression?",
        MANUALS,
        (),
        False,
    )
    assert answer.supported
    assert answer.sentences[0].text.startswith("-k --keep Keep (don't delete) input files")
    # Every word held: answered as before.
    answer = synthesize("Which sed option edits files in place?", MANUALS, (), False)
    assert answer.supported
    assert answer.sentences[0].text.startswith("-i[SUFFIX], --in-place[=SUFFIX] edit files")
