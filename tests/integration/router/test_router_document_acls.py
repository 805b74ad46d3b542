"""Issue 47, item 2, through the router: an Ask made for a principal (its headers on the
call, as the gateway forwards them) answers from the documents that principal may read
only. The router forwards the principal on its Search calls; retrieval's row-level
security does the rest. Citations, the answer text and the trajectory hold nothing of a
document the principal may not read, in RETRIEVE and AGENTIC modes.
"""

from __future__ import annotations

import pytest

from services.common import Principal
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant
from tests.integration.router.stack import Engines, RouterStack

pytestmark = pytest.mark.integration

QUESTION = "What hotel rates may executives book under the travel expense policy?"
PUBLIC = rpb.DocumentInput(
    document_id="travel-policy",
    title="Travel expense policy",
    text="The travel expense policy caps hotel rates at 180 euros a night for every employee.",
)
EXECUTIVE = rpb.DocumentInput(
    document_id="exec-travel",
    title="Executive travel expense policy (marigold)",
    text="Under the marigold travel expense policy executives book hotel rates up to 900 "
    "euros a night.",
    acl=rpb.DocumentAcl(groups=["executives"]),
)


@pytest.mark.parametrize("mode", [pb.ASK_MODE_RETRIEVE, pb.ASK_MODE_AGENTIC])
async def test_an_answer_for_a_principal_cites_and_says_nothing_it_may_not_read(
    router: RouterStack, engines: Engines, pg_url: str, mode: pb.AskMode.ValueType
) -> None:
    tenant = new_tenant(pg_url, "router-acl")
    _, summary = await ingest(engines.retrieval_stub, tenant, [PUBLIC, EXECUTIVE])
    assert summary.documents_included == 2
    request = pb.AskRequest(
        tenant_id=tenant,
        question=QUESTION,
        mode=mode,
        options=pb.AskOptions(include_trajectory=True),
    )

    async def ask(principal: Principal) -> pb.Answer:
        reply = await router.stub.Ask(request, metadata=principal.headers(), timeout=30)
        return reply.answer

    staff = await ask(Principal.of("carol", ["staff"]))
    cited = {c.document_id for c in staff.citations}
    assert cited == {"travel-policy"}, cited
    visible = " ".join(
        [staff.text, *(c.title + c.quote for c in staff.citations), str(staff.trajectory)]
    ).lower()
    assert "marigold" not in visible
    executive = await ask(Principal.of("dana", ["executives"]))
    # The same question for someone who may read it: the hidden document was the best one.
    assert "exec-travel" in {c.document_id for c in executive.citations}
    assert "marigold" in executive.text.lower()
