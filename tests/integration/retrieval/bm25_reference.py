"""Okapi BM25 computed in Python from the chunks' text: the reference the full-text side
of Search must equal. Only the tokenisation comes from Postgres (``to_tsvector``, the
parser the stored vectors use); statistics, lengths and scores are computed here."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import psycopg

_WORDS = (
    "SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) "
    "FROM unnest(to_tsvector('english'::regconfig, %s)) AS u"
)


def text_words(conn: psycopg.Connection[Any], text: str) -> Counter[str]:
    """Word occurrences of ``text`` as the full-text parser counts them."""
    return Counter(dict(conn.execute(_WORDS, (text,)).fetchall()))


def chunk_words(conn: psycopg.Connection[Any], tenant: str) -> dict[str, Counter[str]]:
    """Each chunk's word occurrences over its title, section and body."""
    rows = conn.execute(
        "SELECT chunk_id::text, title, section, body FROM retrieval_chunks WHERE tenant_id = %s",
        (tenant,),
    ).fetchall()
    return {
        r[0]: text_words(conn, r[1]) + text_words(conn, r[2]) + text_words(conn, r[3]) for r in rows
    }


def bm25(
    chunks: dict[str, Counter[str]], query: Counter[str], k1: float, b: float, k3: float
) -> dict[str, float]:
    """Score of every chunk holding a query word: IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``,
    a word repeated q times in the query weighted ``q * (k3 + 1) / (q + k3)``."""
    n = len(chunks)
    if not n:
        return {}
    average = sum(sum(words.values()) for words in chunks.values()) / n
    df = Counter(word for words in chunks.values() for word in words)
    scores: dict[str, float] = {}
    for chunk, words in chunks.items():
        matched = [w for w in query if w in words]
        if not matched:
            continue
        length = sum(words.values())
        scores[chunk] = sum(
            query[w]
            * (k3 + 1)
            / (query[w] + k3)
            * math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            * words[w]
            * (k1 + 1)
            / (words[w] + k1 * (1 - b + b * length / average))
            for w in matched
        )
    return scores


def query_weight(
    chunks: dict[str, Counter[str]], query: Counter[str], k3: float
) -> tuple[float, float]:
    """(the query's BM25 weight, the part of it carried by words some chunk holds): the sum
    over query words of their query-frequency weight times IDF, unseen words at df 0."""
    n = len(chunks)
    df = Counter(word for words in chunks.values() for word in words)
    masses = {
        w: q * (k3 + 1) / (q + k3) * math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
        for w, q in query.items()
    }
    return sum(masses.values()), sum(m for w, m in masses.items() if df[w])


def sparse_guard(
    chunks: dict[str, Counter[str]],
    query: Counter[str],
    *,
    k3: float = 5.0,
    min_share: float = 0.5,
    top_gap: float = 1.3,
    top_boost: float = 2.0,
) -> tuple[float, float]:
    """The fusion guard for ``query`` at the default BM25 settings: (the full-text side's
    weight, configured weight 1; the multiplier of its first hit, which is ``top_boost``
    when that hit is ``top_gap`` times the runner-up's score or alone holds every query
    word some chunk holds)."""
    total, known = query_weight(chunks, query, k3)
    weight = 0.0 if not total or known < min_share * total else 1.0
    df = Counter(word for words in chunks.values() for word in words)
    unseen = [w for w in query if not df[w]]
    if not weight and len(unseen) == 1 and known:
        # one stray unseen word weighs no more than the rarest known word
        n = len(chunks)
        masses = {
            w: q * (k3 + 1) / (q + k3) * math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            for w, q in query.items()
        }
        cap = max(m for w, m in masses.items() if df[w])
        capped = known + min(masses[unseen[0]], cap)
        weight = 1.0 if known >= min_share * capped else 0.0
    scores = bm25(chunks, query, 1.2, 0.75, k3)
    ranked = sorted(scores, key=lambda chunk: (-scores[chunk], chunk))
    if not ranked:
        return weight, 1.0
    words = {w for w in query if any(w in c for c in chunks.values())}
    first, second = ranked[0], ranked[1] if len(ranked) > 1 else None
    holds_all = words <= set(chunks[first]) and (second is None or not words <= set(chunks[second]))
    ahead = scores[first] >= top_gap * (scores[second] if second else 0.0)
    return weight, top_boost if ahead or holds_all else 1.0
