"""Documents in other languages on the real retrieval stack: each document's language is
told at ingest from its text, stored, and returned on GetDocument and ListDocuments; a
German document is found by a German keyword in sparse and hybrid search, beside English
documents that share none of its words."""

from __future__ import annotations

import pytest

from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant, query_one

pytestmark = pytest.mark.integration

GERMAN = pb.DocumentInput(
    document_id="ssh-de",
    title="SSH-Konfiguration",
    text=(
        "Die Konfigurationsdatei des SSH-Dienstes liegt unter /etc/ssh/sshd_config. Der "
        "Dienst liest sie beim Start und nach einem Neustart. Die Anmeldung mit Passwort "
        "wird mit der Zeile PasswordAuthentication no abgeschaltet; danach ist nur noch "
        "die Schlüsselanmeldung möglich."
    ),
)
FRENCH = pb.DocumentInput(
    document_id="cron-fr",
    title="Tâches planifiées",
    text=(
        "Le démon cron exécute les tâches planifiées décrites dans la table de chaque "
        "utilisateur. Chaque ligne indique la minute, l'heure, le jour du mois, le mois et "
        "le jour de la semaine, puis la commande à lancer."
    ),
)
JAPANESE = pb.DocumentInput(
    document_id="apt-ja",
    title="パッケージ管理",
    text="パッケージの一覧を更新するには、管理者として apt update を実行します。"
    "更新されたパッケージは apt upgrade でインストールされます。",
)
ENGLISH = pb.DocumentInput(
    document_id="backup-en",
    title="Backups",
    text=(
        "Backups run every night at two o'clock. Each backup is kept for thirty days and "
        "then removed; restoring a file takes a ticket to the operations team."
    ),
)
NUMBERS = pb.DocumentInput(document_id="ports", title="Ports", text="22 80 443 587 993")
DOCUMENTS = [GERMAN, FRENCH, JAPANESE, ENGLISH, NUMBERS]
EXPECTED = {"ssh-de": "de", "cron-fr": "fr", "apt-ja": "ja", "backup-en": "en", "ports": ""}


@pytest.fixture
async def tenant(retrieval, pg_url) -> str:
    name = new_tenant(pg_url, "lang")
    _, summary = await ingest(retrieval.stub, name, DOCUMENTS)
    assert summary.documents_included == len(DOCUMENTS)
    return name


async def test_each_documents_language_is_stored_and_returned(retrieval, tenant, pg_url) -> None:
    listed = await retrieval.stub.ListDocuments(
        pb.ListDocumentsRequest(tenant_id=tenant, page_size=50)
    )
    assert {d.document_id: d.language for d in listed.documents} == EXPECTED
    got = await retrieval.stub.GetDocument(
        pb.GetDocumentRequest(tenant_id=tenant, document_id="ssh-de")
    )
    assert got.document.language == "de"
    stored = query_one(
        pg_url,
        "SELECT language FROM retrieval_documents WHERE tenant_id = %s AND document_id = %s",
        (tenant, "cron-fr"),
    )
    assert stored == "fr"


@pytest.mark.parametrize("mode", [pb.SEARCH_MODE_SPARSE, pb.SEARCH_MODE_HYBRID])
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Schlüsselanmeldung", "ssh-de"),
        ("Konfigurationsdatei Neustart", "ssh-de"),
        ("tâches planifiées", "cron-fr"),
    ],
)
async def test_a_document_in_another_language_is_found_by_its_words(
    retrieval, tenant, mode: pb.SearchMode.ValueType, query: str, expected: str
) -> None:
    reply = await retrieval.stub.Search(
        pb.SearchRequest(tenant_id=tenant, query=query, mode=mode, top_k=3)
    )
    assert reply.hits and reply.hits[0].document_id == expected
