-- Per-tenant corpus totals for Okapi BM25: how many chunks a tenant holds and how many
-- word occurrences they contain, next to the per-word chunk counts of 0004.
--
-- BM25 needs, besides each word's chunk frequency (retrieval_terms), the number of chunks
-- N (for the IDF) and the average chunk length (for length normalisation). Counting them
-- at search time would read every chunk of the tenant; the same statement-level triggers
-- that keep retrieval_terms exact keep these totals exact, in the same transaction, under
-- the same per-tenant advisory lock.
--
-- A chunk's length is the number of word occurrences in its tsvector: for each lexeme the
-- number of positions it holds (1 for a lexeme stored without positions). Stop words are
-- not counted, as they are not in the tsvector. The search statement measures candidate
-- chunks the same way, so the average and each chunk's length agree.

CREATE FUNCTION retrieval_tsvector_length(v tsvector) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::bigint
    FROM unnest(v) AS u
$$;

CREATE TABLE retrieval_corpus_stats (
    tenant_id text PRIMARY KEY REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    chunks bigint NOT NULL CHECK (chunks > 0),
    tokens bigint NOT NULL CHECK (tokens >= 0)
);

CREATE OR REPLACE FUNCTION retrieval_terms_count_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM retrieval_terms_lock(ARRAY(SELECT DISTINCT n.tenant_id FROM inserted_chunks n));
    INSERT INTO retrieval_terms AS t (tenant_id, lexeme, chunks)
    SELECT n.tenant_id, l.lexeme, count(*)
    FROM inserted_chunks n CROSS JOIN LATERAL unnest(tsvector_to_array(n.tsv)) AS l (lexeme)
    GROUP BY n.tenant_id, l.lexeme
    ON CONFLICT (tenant_id, lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;
    INSERT INTO retrieval_corpus_stats AS s (tenant_id, chunks, tokens)
    SELECT n.tenant_id, count(*), sum(retrieval_tsvector_length(n.tsv))
    FROM inserted_chunks n
    GROUP BY n.tenant_id
    ON CONFLICT (tenant_id) DO UPDATE
        SET chunks = s.chunks + excluded.chunks, tokens = s.tokens + excluded.tokens;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION retrieval_terms_count_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM retrieval_terms_lock(ARRAY(SELECT DISTINCT o.tenant_id FROM deleted_chunks o));
    WITH removed AS (
        SELECT o.tenant_id, l.lexeme, count(*) AS chunks
        FROM deleted_chunks o CROSS JOIN LATERAL unnest(tsvector_to_array(o.tsv)) AS l (lexeme)
        GROUP BY o.tenant_id, l.lexeme
    ), emptied AS (
        DELETE FROM retrieval_terms t USING removed r
        WHERE t.tenant_id = r.tenant_id AND t.lexeme = r.lexeme AND t.chunks <= r.chunks
    )
    UPDATE retrieval_terms t SET chunks = t.chunks - r.chunks
    FROM removed r
    WHERE t.tenant_id = r.tenant_id AND t.lexeme = r.lexeme AND t.chunks > r.chunks;
    WITH removed AS (
        SELECT o.tenant_id, count(*) AS chunks, sum(retrieval_tsvector_length(o.tsv)) AS tokens
        FROM deleted_chunks o
        GROUP BY o.tenant_id
    ), emptied AS (
        DELETE FROM retrieval_corpus_stats s USING removed r
        WHERE s.tenant_id = r.tenant_id AND s.chunks <= r.chunks
    )
    UPDATE retrieval_corpus_stats s
    SET chunks = s.chunks - r.chunks, tokens = s.tokens - r.tokens
    FROM removed r
    WHERE s.tenant_id = r.tenant_id AND s.chunks > r.chunks;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION retrieval_terms_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM retrieval_terms;
    DELETE FROM retrieval_corpus_stats;
    RETURN NULL;
END
$$;

INSERT INTO retrieval_corpus_stats (tenant_id, chunks, tokens)
SELECT c.tenant_id, count(*), sum(retrieval_tsvector_length(c.tsv))
FROM retrieval_chunks c
GROUP BY c.tenant_id;

GRANT SELECT, INSERT, UPDATE, DELETE ON retrieval_corpus_stats TO tandem_retrieval_app;
GRANT EXECUTE ON FUNCTION retrieval_tsvector_length(tsvector) TO tandem_retrieval_app;
ALTER TABLE retrieval_corpus_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE retrieval_corpus_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY retrieval_corpus_stats_tenant ON retrieval_corpus_stats
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
