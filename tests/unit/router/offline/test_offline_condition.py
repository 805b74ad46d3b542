"""A sentence that opens with a sibling of the question's case does not answer it
(issue 48, round 4).

"On POSIX, it uses the $HOME environment variable …" and "On Windows, it uses the
USERPROFILE environment variable …" share nearly every word; asked "On Windows, which
environment variable …", the POSIX sentence outranked the Windows one on "home" and was
the one quoted. On real files: Node's
os.html as this machine's nodejs package ships it (the dev set's copy) and ln(1) of
coreutils rendered to HTML (``ISSUE-48-probes-r4/build.py``), through the product's
extractor and chunker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.llm import Passage
from services.retrieval import ContentType, chunk_text, normalise
from services.retrieval.extract import as_markdown, extract
from services.router.offline._condition import question_case, sibling_case
from services.router.offline._extractive import ranked_sentences

ROOT = Path(__file__).parents[4]
FILES = {
    "node-os.html": ROOT / "services/bench/devsets/documents/corpus/node-os.html",
    "ln.html": ROOT / "bench/results/ISSUE-48-probes-r4/corpus/ln.html",
}


def _passages(name: str) -> list[Passage]:
    text = normalise(as_markdown(extract(FILES[name].read_bytes(), name)))
    chunks = chunk_text(text, ContentType.MARKDOWN)
    return [Passage(str(n), c.text, name, 0.1) for n, c in enumerate(chunks, 1)]


@pytest.mark.parametrize(
    ("name", "question", "stated", "sibling"),
    [
        (
            "node-os.html",
            "On Windows, which environment variable does Node's home directory lookup use?",
            "USERPROFILE",
            "$HOME",
        ),
        (
            "ln.html",
            "In the 2nd form, where does ln create the link to TARGET?",
            "current directory",
            "1st form",
        ),
    ],
)
def test_the_sentence_under_the_questions_case_answers(
    name: str, question: str, stated: str, sibling: str
) -> None:
    ranked = ranked_sentences(question, _passages(name))
    # The sibling case is not ranked at all; the question's case is among the two
    # sentences an answer quotes (os.homedir's neighbour, userInfo's "This differs from
    # os.homedir() …", holds more of the question's words and may lead).
    assert not any(sibling in c.text for c in ranked)
    assert any(stated in c.text for c in ranked[:2])


def test_siblings_differ_each_way_or_by_a_negation() -> None:
    windows = question_case("On Windows, what does it return?")
    assert sibling_case(windows, "On POSIX, it returns the path.")
    assert sibling_case(windows, "On non-Windows platforms, the child leads a group.")
    # The same case said with more words, or no case at all, is no sibling.
    assert not sibling_case(windows, "On Windows systems only, returns a prefixed path.")
    assert not sibling_case(windows, "It returns the path unchanged.")
    # A frame that points back or at the text names no case.
    assert not sibling_case(windows, "In this case, the path is returned.")
    assert not sibling_case(windows, "For example, on POSIX it returns '/'.")
    assert question_case("Which environment variable is used on Windows?") is None
