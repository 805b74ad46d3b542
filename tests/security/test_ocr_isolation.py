"""OCR cannot outlive the ingest that asked for it (issue 48 item 3: bounded time per page).

Through the real retrieval server (embedded Postgres, the real model over gRPC). The
attack: an image that keeps Tesseract busy (a page of speckle noise, 15 s of one core),
and the caller hanging up. The extraction pool kills the worker as soon as nobody wants
its answer; the ``tesseract`` it started must die with it (PR_SET_PDEATHSIG), or every
hung-up upload leaves a core busy for the whole page timeout. Failed before the fix
(no death signal): the orphaned tesseract was still running seconds later.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import time
from collections.abc import Callable
from typing import Any

import psutil
import pytest
from PIL import Image

from tandem.v1 import retrieval_service_pb2 as pb
from tests.documents import image_bytes
from tests.faults.inprocess import pg_url
from tests.integration.retrieval.stack import (
    new_tenant,
)

__all__ = ["pg_url"]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("tesseract") is None,
        reason="no tesseract: `make ocr` (part of `make setup`, as root) installs it",
    ),
]
WAIT_S = 20.0


def _speckle(width: int = 1700, height: int = 2200, seed: int = 7) -> bytes:
    """A page of salt-and-pepper noise: Tesseract hunts for words in it for ~15 s."""
    noise = Image.frombytes("L", (width, height), random.Random(seed).randbytes(width * height))
    return image_bytes(noise.point(lambda v: 0 if v < 64 else 255), "PNG")


def _ocr_processes() -> list[psutil.Process]:
    """The tesseract programs reading a page, started by this test's workers."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() == "tesseract" and "stdin" in child.cmdline():
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def _working(process: psutil.Process) -> bool:
    """Still running: not gone, and not a zombie (killed, waiting for init to reap it)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_hung_up_upload_leaves_no_tesseract_running(
    make_retrieval: Callable[..., Any], pg_url: str
) -> None:
    retrieval = await make_retrieval(RETRIEVAL_OCR_PAGE_TIMEOUT_S="30")
    tenant = new_tenant(pg_url, "ocr-hangup")
    document = pb.DocumentInput(document_id="noise", content=_speckle(), file_name="noise.png")
    request = pb.IngestDocumentsRequest(tenant_id=tenant, documents=[document])
    call = retrieval.stub.IngestDocuments(request, timeout=60)
    reading = asyncio.create_task(call.read())
    deadline = time.monotonic() + WAIT_S
    while not (running := _ocr_processes()):
        assert time.monotonic() < deadline, "no tesseract started for the page"
        await asyncio.sleep(0.05)
    while sum(running[0].cpu_times()[:2]) < 1.0:  # past reading the image: recognising
        assert time.monotonic() < deadline, "tesseract did not get to work"
        await asyncio.sleep(0.05)
    # OCR is under way; the caller goes away.
    call.cancel()
    await asyncio.gather(reading, return_exceptions=True)
    for _ in range(60):  # 3 s
        if not (alive := [p for p in running if _working(p)]):
            break
        await asyncio.sleep(0.05)
    assert not alive, f"tesseract outlived the worker killed for a hung-up caller: {alive}"
    print(f"tesseract {[p.pid for p in running]} ended with its worker")
