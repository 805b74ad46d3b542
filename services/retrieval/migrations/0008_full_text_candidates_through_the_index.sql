-- Full-text candidates found through the full-text index, under row-level security.
--
-- Postgres lets a condition use an index below a row-level-security policy only when the
-- condition's function cannot leak what the policy hides (it is LEAKPROOF), and the
-- full-text match `@@` is not. So as the service's role every search matched the query
-- against every chunk of the tenant, one by one: on a 78 300-chunk tenant the hybrid
-- statement took 211 ms instead of 16 (the retrieval benchmark connects as the owner,
-- a superuser, so it never showed).
--
-- The candidates now come from this function. It runs as the tables' owner (SECURITY
-- DEFINER) and states the policy's own rule, the transaction's `tandem.tenant_id`, as a
-- plain condition, so the planner may combine it with the index: the service role still
-- sees only its tenant's chunks, and no setting still means no rows. The owner needs to
-- read past the forced policy for that (a superuser owner always could): the policy
-- below lets it read, never write. `max_chunks` NULL is no limit; a NULL filter is no
-- filter; `except_words` drops the chunks that also match it. (Parameter names differ
-- from every column's: in a SQL function a column of the same name would win.)
CREATE POLICY retrieval_chunks_owner_reads ON retrieval_chunks
    FOR SELECT TO CURRENT_USER USING (true);

CREATE FUNCTION retrieval_text_candidates(
    match_words tsquery,
    except_words tsquery,
    max_chunks integer,
    only_categories text[],
    only_documents text[],
    metadata_contains jsonb
) RETURNS TABLE (chunk_id uuid, tsv tsvector, tsv_length bigint)
LANGUAGE sql STABLE SECURITY DEFINER
AS $$
    SELECT c.chunk_id, c.tsv, c.tsv_length
    FROM retrieval_chunks c
    WHERE c.tenant_id = current_setting('tandem.tenant_id', true)
      AND c.tsv @@ match_words
      AND (except_words IS NULL OR NOT c.tsv @@ except_words)
      AND (only_categories IS NULL OR c.category = ANY(only_categories))
      AND (only_documents IS NULL OR c.document_id = ANY(only_documents))
      AND (metadata_contains IS NULL OR c.document_id IN (
          SELECT f.document_id FROM retrieval_documents f
          WHERE f.tenant_id = current_setting('tandem.tenant_id', true)
            AND f.metadata @> metadata_contains))
    LIMIT max_chunks
$$;

-- The schema the tables were made in, after pg_catalog: nothing in another schema can
-- stand in for a table, `@@` or `=` while the function runs as the owner.
DO $$
BEGIN
    EXECUTE format(
        'ALTER FUNCTION retrieval_text_candidates(tsquery, tsquery, integer, text[], text[], '
        'jsonb) SET search_path = pg_catalog, %I, pg_temp',
        current_schema()
    );
END
$$;

REVOKE ALL ON FUNCTION retrieval_text_candidates(tsquery, tsquery, integer, text[], text[], jsonb)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION retrieval_text_candidates(tsquery, tsquery, integer, text[], text[], jsonb)
    TO tandem_retrieval_app;
