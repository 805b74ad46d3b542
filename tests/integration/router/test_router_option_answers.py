"""Answers that stop at the answer, end to end: man-page text (bzip2 1.0.8 and GNU sed 4.9
as ``man PAGE | col -b`` renders them) ingested through the real retrieval service and
chunker, asked through the real router offline. The answer is the option's own line
with its description, never the neighbouring options."""

from __future__ import annotations

import pytest

from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant
from tests.integration.router.stack import Engines, RouterStack
from tests.manpages import BZIP2_OPTIONS, SED_OPTIONS

pytestmark = pytest.mark.integration


@pytest.fixture
async def manuals(pg_url: str, engines: Engines) -> str:
    name = new_tenant(pg_url, "man")
    await ingest(
        engines.retrieval_stub,
        name,
        [
            rpb.DocumentInput(document_id="bzip2.1", title="bzip2(1)", text=BZIP2_OPTIONS),
            rpb.DocumentInput(document_id="sed.1", title="sed(1)", text=SED_OPTIONS),
        ],
    )
    return name


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Which option keeps the input files?",
            "-k --keep Keep (don't delete) input files during compression or decompression.",
        ),
        (
            "Which sed option edits files in place?",
            "-i[SUFFIX], --in-place[=SUFFIX] edit files in place (makes backup if SUFFIX "
            "supplied).",
        ),
    ],
)
async def test_an_option_question_is_answered_by_that_options_line_only(
    router: RouterStack, manuals: str, question: str, expected: str
) -> None:
    answer = (
        await router.stub.Ask(
            pb.AskRequest(tenant_id=manuals, question=question, mode=pb.ASK_MODE_RETRIEVE)
        )
    ).answer
    assert answer.outcome == pb.ANSWER_OUTCOME_ANSWERED
    assert answer.text == f"{expected} [1]"
