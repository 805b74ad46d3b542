"""The condition a question sets, read against a sentence that sets a sibling one.

Reference text often states one fact per case, each sentence opening with its case:
"On POSIX, it uses the $HOME environment variable … On Windows, it uses the USERPROFILE
environment variable …", "In the 1st form, create a link … In the 2nd form, create a
link … in the current directory". The sentences share nearly all their words, so a
question that opens with its case ("On Windows, which environment variable …") is
covered about as well by every sibling, and the case's own word ("Windows") is one
term among many — the sibling may win on another shared word or on order. A sentence
that opens with a different case of the same kind answers that case, not the
question's: it is left out.

Only an opening prepositional frame counts ("On X,", "In X,", "Under X,", "For X,"),
in the question and in the sentence alike: there the phrase is the case the rest is
said under. Two frames are siblings when each names something the other does not
("Windows" vs "POSIX", "2nd form" vs "1st form"); a frame that only adds to the
question's ("On Windows systems only," for "On Windows,") states the same case, unless what it
adds is a negation ("On non-Windows platforms,": the case's complement). A
frame that refers back or to the text itself ("In this case,", "For example,", "In
addition,") names no case and is never a sibling.
"""

from __future__ import annotations

import re

from services.router.offline._text import STOPWORDS, lowered_stems, word_list

# The frame: a preposition opening the text, its phrase up to the first comma.
_FRAME = re.compile(r"^\s*(?:on|in|under|for)\s+(?P<case>[^,.;:!?]{1,60}),", re.I)
# Words by which a frame points back or at the text, not at a case of its own.
_NO_CASE = frozenset(
    word_list(
        """
        this that these those such which either both each all any most some other another
        example instance addition particular general short fact contrast practice summary
        turn order words brief sum effect
        """
    )
)
# A frame holding one of these states the complement of the same frame without it.
_NEGATIONS = frozenset(("non", "not", "no"))


def _case(text: str) -> frozenset[str] | None:
    """The stems of the case ``text`` opens with, or None when it opens with none."""
    match = _FRAME.match(text)
    if match is None:
        return None
    words = lowered_stems(match.group("case"))
    if any(low in _NO_CASE for low, _ in words):
        return None
    case = frozenset(s for low, s in words if low not in STOPWORDS or low in _NEGATIONS)
    return case or None


def question_case(question: str) -> frozenset[str] | None:
    """The case a question opens with ("On Windows, …" gives {"window"}), or None."""
    return _case(question)


def sibling_case(case: frozenset[str] | None, sentence: str) -> bool:
    """Whether ``sentence`` opens with a case of the same kind as the question's
    ``case`` but another one: each names a word the other does not."""
    if not case:
        return False
    own = _case(sentence)
    if own is None:
        return False
    return (bool(case - own) and bool(own - case)) or (
        bool(case & _NEGATIONS) != bool(own & _NEGATIONS)
    )
