-- Term statistics for bounded full-text search: per tenant, how many chunks contain each
-- lexeme of the full-text vector (the chunk frequency).
--
-- Ranking every full-text match is O(matches): a query word found in most chunks made
-- the sparse side of a 100K-chunk hybrid search rank every chunk (185 ms at p50). The
-- search reads candidates in tiers within a budget of rows; after the tiers of chunks
-- holding (nearly) all the words, these counts pick the query's rarer words to probe
-- (see the search statement in _repository.py). Statement-level triggers keep the counts exact in the
-- same transaction as the chunks: inserts add, deletes subtract, TRUNCATE clears.

CREATE TABLE retrieval_terms (
    tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    lexeme text NOT NULL,
    chunks integer NOT NULL CHECK (chunks > 0),
    PRIMARY KEY (tenant_id, lexeme)
);

-- Writers of one tenant's counts take that tenant's transaction-scoped advisory lock
-- before touching them, so they queue instead of deadlocking: replacing a document
-- subtracts its old words and then adds its new ones, and two such transactions would
-- otherwise lock shared words in opposite orders. Writes of a tenant are short
-- (embedding happens before the transaction), so the queue costs little.
CREATE FUNCTION retrieval_terms_lock(tenants text[]) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtext('tandem.retrieval_terms'), hashtext(t))
    FROM (SELECT DISTINCT unnest(tenants) AS t ORDER BY 1) AS s;
$$;

CREATE FUNCTION retrieval_terms_count_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM retrieval_terms_lock(ARRAY(SELECT DISTINCT n.tenant_id FROM inserted_chunks n));
    INSERT INTO retrieval_terms AS t (tenant_id, lexeme, chunks)
    SELECT n.tenant_id, l.lexeme, count(*)
    FROM inserted_chunks n CROSS JOIN LATERAL unnest(tsvector_to_array(n.tsv)) AS l (lexeme)
    GROUP BY n.tenant_id, l.lexeme
    ON CONFLICT (tenant_id, lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;
    RETURN NULL;
END
$$;

CREATE FUNCTION retrieval_terms_count_deleted() RETURNS trigger
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
    RETURN NULL;
END
$$;

CREATE FUNCTION retrieval_terms_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM retrieval_terms;
    RETURN NULL;
END
$$;

CREATE TRIGGER retrieval_chunks_terms_insert
    AFTER INSERT ON retrieval_chunks
    REFERENCING NEW TABLE AS inserted_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION retrieval_terms_count_inserted();
CREATE TRIGGER retrieval_chunks_terms_delete
    AFTER DELETE ON retrieval_chunks
    REFERENCING OLD TABLE AS deleted_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION retrieval_terms_count_deleted();
CREATE TRIGGER retrieval_chunks_terms_truncate
    AFTER TRUNCATE ON retrieval_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION retrieval_terms_clear();

-- Chunks are immutable once written (a changed document's chunks are replaced), so an
-- update that changes the words would leave the counts wrong: refuse it.
CREATE FUNCTION retrieval_chunks_refuse_text_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'retrieval_chunks text is immutable; replace the chunk instead'
        USING ERRCODE = 'feature_not_supported';
END
$$;
CREATE TRIGGER retrieval_chunks_text_immutable
    BEFORE UPDATE OF tenant_id, title, section, body ON retrieval_chunks
    FOR EACH ROW EXECUTE FUNCTION retrieval_chunks_refuse_text_update();

INSERT INTO retrieval_terms (tenant_id, lexeme, chunks)
SELECT c.tenant_id, l.lexeme, count(*)
FROM retrieval_chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) AS l (lexeme)
GROUP BY c.tenant_id, l.lexeme;

GRANT SELECT, INSERT, UPDATE, DELETE ON retrieval_terms TO tandem_retrieval_app;
ALTER TABLE retrieval_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE retrieval_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY retrieval_terms_tenant ON retrieval_terms
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
