"""A document refusal names what it could not find, end to end: real files of the
real-documents dev set (du(1) as a Word guide, sort(1) as groff typeset it) uploaded
through the real retrieval service and its extraction, asked through the real router
offline. When the passages found lack some of the question's words, the refusal names
them as the question writes them; it never names a word the passages hold. When they
lack more of them than the best sentence says, that sentence is not stated."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.router.offline import NO_ANSWER
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant
from tests.integration.router.stack import Engines, RouterStack

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).parents[3] / "services/bench/devsets/documents/corpus"


def _upload(name: str) -> rpb.DocumentInput:
    path = CORPUS / name
    return rpb.DocumentInput(
        document_id=name, content=path.read_bytes(), file_name=name, category="documentation"
    )


@pytest.fixture
async def manuals(pg_url: str, engines: Engines) -> str:
    name = new_tenant(pg_url, "refusal")
    _, summary = await ingest(
        engines.retrieval_stub, name, [_upload("du-guide.docx"), _upload("sort.pdf")]
    )
    assert summary.documents_failed == 0
    return name


async def _ask(router: RouterStack, tenant: str, question: str) -> pb.Answer:
    request = pb.AskRequest(tenant_id=tenant, question=question, mode=pb.ASK_MODE_RETRIEVE)
    return (await router.stub.Ask(request)).answer


# (question, what its refusal names): one tenant for all (an upload is the slow part).
REFUSALS = (
    ("How does du calibrate the flux capacitor?", '"calibrate" or "flux capacitor"'),
    ("Does sort support Kerberos authentication?", '"support Kerberos authentication"'),
    # Named as the question writes them (the plural kept), "du" held, so not named.
    ("Does du's summary calibrate the flux capacitors?", '"calibrate" or "flux capacitors"'),
    # Answered before with a confident guess sharing the common words ("sort", "set":
    # the LC_ALL line; "sort", "run": --parallel): the passages lack more of the
    # question than the best sentence says (``unfounded``).
    ("Which sort option sets the warp drive speed?", '"warp drive speed"'),
    ("How fast does sort run on a Raspberry Pi?", '"fast" or "Raspberry Pi"'),
)


async def test_a_refusal_names_the_words_the_passages_found_lack(
    router: RouterStack, manuals: str
) -> None:
    for question, named in REFUSALS:
        answer = await _ask(router, manuals, question)
        assert answer.outcome == pb.ANSWER_OUTCOME_NOT_FOUND, question
        assert answer.text == f"{NO_ANSWER} The passages found do not mention {named}."
        assert not answer.citations
