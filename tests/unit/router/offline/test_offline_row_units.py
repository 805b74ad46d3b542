"""A table row with a prose cell, offered to the sentence picker as a paragraph
("PRIORITY_HIGH — Description: …"), is one unit up to ``OPTION_WORDS`` words, as an
option with its description is: its sentences split apart lost the row's name, so a
question naming the constant was answered by a sentence of another section that said
more of its other words, with the row's sentence second (two sentences, two sections).
On real text: Node.js 20's os API page (``os.setPriority`` and the priority constants
table, as the HTML extractor gives them), asked in other words than the dev set's."""

from __future__ import annotations

from services.common.llm import Passage
from services.router.offline._extractive import synthesize
from services.router.offline._text import OPTION_WORDS, split_units

TITLE = "OS | Node.js v20.20.2 Documentation"
SET_PRIORITY = Passage(
    "1",
    "Attempts to set the scheduling priority for the process specified by pid. If pid is "
    "not provided or is 0, the process ID of the current process is used.\n\nThe priority "
    "input must be an integer between -20 (high priority) and 19 (low priority). Due to "
    "differences between Unix priority levels and Windows priority classes, priority is "
    "mapped to one of six priority constants in os.constants.priority. When retrieving a "
    "process priority level, this range mapping may cause the return value to be slightly "
    "different on Windows. To avoid confusion, set priority to one of the priority "
    "constants.\n\nOn Windows, setting priority to PRIORITY_HIGHEST requires elevated user "
    "privileges. Otherwise the set priority will be silently reduced to PRIORITY_HIGH.",
    TITLE,
    0.093,
)
CONSTANTS = Passage(
    "2",
    "The following process scheduling constants are exported by os.constants.priority.\n\n"
    "| row | Constant | Description |\n| --- | --- | --- |\n"
    "| 4 | PRIORITY_NORMAL | The default process scheduling priority. This corresponds to "
    "NORMAL_PRIORITY_CLASS on Windows, and a nice value of 0 on all other platforms. |\n"
    "| 5 | PRIORITY_ABOVE_NORMAL | The process scheduling priority above PRIORITY_NORMAL "
    "and below PRIORITY_HIGH. This corresponds to ABOVE_NORMAL_PRIORITY_CLASS on Windows, "
    "and a nice value of -7 on all other platforms. |\n"
    "| 6 | PRIORITY_HIGH | The process scheduling priority above PRIORITY_ABOVE_NORMAL and "
    "below PRIORITY_HIGHEST. This corresponds to HIGH_PRIORITY_CLASS on Windows, and a nice "
    "value of -14 on all other platforms. |",
    TITLE,
    0.091,
)


def test_a_row_paragraph_is_one_unit() -> None:
    units = split_units(
        "PRIORITY_NORMAL — Description: The default process scheduling priority. This "
        "corresponds to NORMAL_PRIORITY_CLASS on Windows, and a nice value of 0 on all "
        "other platforms."
    )
    assert [u.kind for u in units] == ["row"]
    assert units[0].text.startswith("PRIORITY_NORMAL — Description: The default")


def test_a_long_row_paragraph_is_read_as_sentences() -> None:
    long = "NAME — Description: " + " ".join(["word"] * OPTION_WORDS) + ". Second sentence."
    assert [u.kind for u in split_units(long)] == ["sentence", "sentence"]


def test_a_question_naming_a_constant_gets_its_row_in_one_line() -> None:
    answer = synthesize(
        "Outside Windows, which nice value does PRIORITY_ABOVE_NORMAL stand for?",
        [SET_PRIORITY, CONSTANTS],
        (),
        False,
    )
    assert answer.supported
    assert len(answer.sentences) == 1
    assert answer.sentences[0].citations == ("2",)
    assert "PRIORITY_ABOVE_NORMAL — Description:" in answer.text
    assert "a nice value of -7" in answer.text
