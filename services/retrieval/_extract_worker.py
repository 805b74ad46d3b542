"""One extraction worker process, and the wire both sides of its pipes speak.

Extraction parses attacker-supplied bytes with third-party parsers; it runs in a child
process (``python -m services.retrieval._extract_main``) so that a file which is slow
or hungry costs that process only: the parent kills it at the deadline (a thread cannot
be stopped, and used to keep burning CPU after the caller had its answer), and the
kernel enforces the limits the worker sets on itself before it reads any file:
``RLIMIT_AS`` (address space: the start-up size plus a budget; past it an allocation
fails with MemoryError) and, per file, ``RLIMIT_CPU`` (SIGXCPU ends the process should
the parent's kill ever be late).

OCR (``extract._ocr``) runs the ``tesseract`` program from here, one page at a time: a
child holds itself to a smaller address space (``RETRIEVAL_OCR_MEMORY_MB``), is killed
past its page timeout, dies with this worker (PR_SET_PDEATHSIG), and the document's OCR
stops at 85% of the deadline, so this worker's limits need no raising for a scan.

A worker serves one file at a time, many files in its life: its imports (about a
second of CPU) are paid once, not per file. Frames are length-prefixed; requests are a
JSON header and the file's bytes; replies are JSON, never pickle, so a worker
subverted by a hostile file cannot run code in the service by what it replies.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import logging
import math
import os
import resource
import signal
import struct
import sys
import warnings
from typing import Any, BinaryIO

from services.retrieval.extract import (
    Extracted,
    ExtractLimits,
    Kind,
    OcrOptions,
    Reason,
    Section,
    Unextractable,
    extract,
)

_LENGTH = struct.Struct(">Q")
_PR_SET_PDEATHSIG = 1
# A refusal with the peak address space this close to the ceiling is the memory limit's.
_NEAR_CEILING = 16 * 1024 * 1024
# The byte a worker writes once its imports are done and its limits are set.
READY = b"R"


def frame(payload: bytes) -> bytes:
    return _LENGTH.pack(len(payload)) + payload


def request_header(name: str, limits: ExtractLimits, cpu_s: float) -> bytes:
    fields = {
        "max_input_bytes": limits.max_input_bytes,
        "max_chars": limits.max_chars,
    }
    ocr = dataclasses.asdict(limits.ocr)
    return json.dumps({"name": name, "limits": fields, "ocr": ocr, "cpu_s": cpu_s}).encode()


def encode_extracted(extracted: Extracted) -> bytes:
    return json.dumps(
        {
            "kind": extracted.kind.value,
            "title": extracted.title,
            "sections": [[s.heading, s.text, s.locator] for s in extracted.sections],
            "encoding": extracted.encoding,
            "notes": extracted.notes,
        }
    ).encode()


def decode_reply(payload: bytes) -> Extracted:
    """The worker's reply: an ``Extracted``, or the ``Unextractable`` it raised."""
    reply = json.loads(payload)
    if "refused" in reply:
        reason, message = reply["refused"]
        raise Unextractable(Reason(reason), str(message))
    return Extracted(
        Kind(reply["kind"]),
        reply["title"],
        [Section(str(h), str(t), str(loc)) for h, t, loc in reply["sections"]],
        encoding=reply["encoding"],
        notes=[str(n) for n in reply["notes"]],
    )


def refusal(reason: Reason, message: str, *, retire: bool = False) -> bytes:
    """``retire``: the worker should be replaced after this reply."""
    return json.dumps({"refused": [reason.value, message], "retire": retire}).encode()


def retires(payload: bytes) -> bool:
    return bool(json.loads(payload).get("retire"))


def _read_frame(stream: BinaryIO) -> bytes | None:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None  # the service closed our stdin: it is done with us
    (size,) = _LENGTH.unpack(head)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return payload


def _address_space_bytes() -> int:
    """The process's current virtual size (VmSize), the base the memory budget adds to."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _cpu_used_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_address_space_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmPeak:"):
                return int(line.split()[1]) * 1024
    return 0


def _out_of_memory(memory_bytes: int) -> bytes:
    # The parent replaces a worker that ran out: its heap may be left fragmented.
    return refusal(
        Reason.TOO_LARGE,
        f"needs more than {memory_bytes // (1024 * 1024):,} MiB of memory to extract "
        "(the per-file limit)",
        retire=True,
    )


def _serve_one(header: dict[str, Any], data: bytes, ceiling: int, memory_bytes: int) -> bytes:
    # This file may use cpu_s more seconds; the hard limit stays unlimited so the next
    # file's soft limit can be set higher (an unprivileged process cannot raise a hard one).
    allowed = math.ceil(_cpu_used_s() + float(header["cpu_s"])) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (allowed, resource.RLIM_INFINITY))
    limits = ExtractLimits(
        **{k: int(v) for k, v in header["limits"].items()}, ocr=OcrOptions(**header["ocr"])
    )
    try:
        return encode_extracted(extract(data, str(header["name"]), limits=limits))
    except Unextractable as exc:
        # A C library (libxml2, zlib) that cannot allocate reports a parse error, not
        # MemoryError: a failure at the address-space ceiling is the memory limit's.
        if ceiling and _peak_address_space_bytes() > ceiling - _NEAR_CEILING:
            return _out_of_memory(memory_bytes)
        return refusal(exc.reason, exc.message)


def _die_with_parent() -> None:
    """SIGKILL this worker when the service exits, even mid-file (an idle worker ends
    anyway when its stdin closes). Linux's PR_SET_PDEATHSIG; elsewhere a no-op."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def main(argv: list[str]) -> int:
    """``_extract_main MEMORY_BYTES``: serve requests on stdin until it closes."""
    _die_with_parent()
    # The parsers' own warnings may quote the file (a bad cell, a broken object): a
    # worker's stderr is the service's log, which never holds document text.
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    memory_bytes = int(argv[0])
    requests = sys.stdin.buffer
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot break a frame
    ceiling = 0
    if memory_bytes > 0:
        ceiling = _address_space_bytes() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    replies.write(READY)
    replies.flush()
    while True:
        header = _read_frame(requests)
        data = _read_frame(requests) if header is not None else None
        if header is None or data is None:
            return 0
        try:
            reply = _serve_one(json.loads(header), data, ceiling, memory_bytes)
        except MemoryError:
            reply = _out_of_memory(memory_bytes)
        replies.write(frame(reply))
        replies.flush()
