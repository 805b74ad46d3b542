-- Document ACLs: who inside a tenant may read a document, enforced by row-level security.
--
-- A document may name the principals and groups allowed to read it. NULL in both columns
-- is the whole tenant (every document before this migration, and every document ingested
-- without an ACL).
--
-- The ACL lives on the document row only. Copying it onto every chunk (as category and
-- title are) made UpdateDocumentAcl rewrite every chunk row, and an update that cannot
-- stay on its page re-inserts the row into every index of the table, HNSW and full-text
-- GIN included: 2.7 s at p50 and 7.4 s at p99 for a 1,000-chunk document (target 50 ms).
-- Instead a chunk is hidden when its document is in the reader's forbidden set: the
-- tenant's restricted documents the reader may not read, computed once per statement
-- (an uncorrelated subquery: a hashed lookup per chunk row) from a partial index that
-- holds restricted documents only. An ACL change is then one document row.
--
-- The reader is described by three settings the repository sets at the start of every
-- transaction, next to `tandem.tenant_id`, from the request's principal:
-- - `tandem.principal`: the principal's id;
-- - `tandem.groups`: its groups, as a text[] literal ('{sales,"field ops"}');
-- - `tandem.full_view`: 'on' for a call made with no principal (a service key: the
--   tenant's full view, as before).
-- FAIL CLOSED: with none of them set, a restricted row is invisible; only the explicit
-- full-view marker shows every row. A missing group or id is less access, never more.

ALTER TABLE retrieval_documents
    ADD COLUMN acl_principals text[],
    ADD COLUMN acl_groups text[],
    ADD CONSTRAINT retrieval_documents_acl_pair
        CHECK ((acl_principals IS NULL) = (acl_groups IS NULL));

-- The restricted documents of a tenant, and nothing else: the forbidden set reads this.
CREATE INDEX retrieval_documents_restricted
    ON retrieval_documents (tenant_id, document_id) WHERE acl_principals IS NOT NULL;

-- True when the transaction's reader may read a document with this ACL. Plain SQL,
-- STABLE: inlined where it is used. current_setting(..., true) is NULL when never set and
-- '' once reset: both match nothing (nullif keeps the cast from failing on '').
CREATE FUNCTION retrieval_acl_allows(principals text[], groups text[]) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT principals IS NULL
        OR coalesce(current_setting('tandem.full_view', true) = 'on', false)
        OR coalesce(current_setting('tandem.principal', true) = ANY (principals), false)
        OR coalesce(
            groups && nullif(current_setting('tandem.groups', true), '')::text[], false)
$$;

-- The ids of the transaction tenant's documents the reader may not read. It runs as the
-- tables' owner (SECURITY DEFINER), which the ACL policies below do not bind, because
-- the reader's own view hides exactly the rows it must list; it returns ids only, and
-- only to the policies and the candidate function that test chunks against them.
CREATE FUNCTION retrieval_forbidden_documents() RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER AS $$
    SELECT d.document_id
    FROM retrieval_documents d
    WHERE d.tenant_id = current_setting('tandem.tenant_id', true)
      AND d.acl_principals IS NOT NULL
      AND NOT retrieval_acl_allows(d.acl_principals, d.acl_groups)
$$;

-- RESTRICTIVE: ANDed with the tenant policies of 0002. They bind the service's role (the
-- owner reads past them only inside the two functions here, which state the rule).
-- WITH CHECK: a principal cannot write a row it could not read (an ACL that leaves
-- itself out, or a document id held by a document it cannot read).
CREATE POLICY retrieval_documents_acl ON retrieval_documents AS RESTRICTIVE
    TO tandem_retrieval_app
    USING (retrieval_acl_allows(acl_principals, acl_groups))
    WITH CHECK (retrieval_acl_allows(acl_principals, acl_groups));
-- The full view is tested first: a service key's statement never builds the set.
CREATE POLICY retrieval_chunks_acl ON retrieval_chunks AS RESTRICTIVE
    TO tandem_retrieval_app
    USING (
        coalesce(current_setting('tandem.full_view', true) = 'on', false)
        OR document_id NOT IN (SELECT retrieval_forbidden_documents())
    )
    WITH CHECK (
        coalesce(current_setting('tandem.full_view', true) = 'on', false)
        OR document_id NOT IN (SELECT retrieval_forbidden_documents())
    );

-- The full-text candidates (0008) run as the owner, which may be a superuser that skips
-- every policy: they state the ACL rule as a plain condition, as they state the tenant's.
CREATE OR REPLACE FUNCTION retrieval_text_candidates(
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
      AND (coalesce(current_setting('tandem.full_view', true) = 'on', false)
           OR c.document_id NOT IN (SELECT retrieval_forbidden_documents()))
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

-- Both functions run as the owner: nothing in another schema may stand in for a table or
-- an operator (0008). CREATE OR REPLACE cleared the candidates' setting: pin it again.
DO $$
BEGIN
    EXECUTE format(
        'ALTER FUNCTION retrieval_text_candidates(tsquery, tsquery, integer, text[], text[], '
        'jsonb) SET search_path = pg_catalog, %I, pg_temp',
        current_schema()
    );
    EXECUTE format(
        'ALTER FUNCTION retrieval_forbidden_documents() SET search_path = pg_catalog, %I, '
        'pg_temp',
        current_schema()
    );
END
$$;

REVOKE ALL ON FUNCTION retrieval_forbidden_documents() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION retrieval_forbidden_documents() TO tandem_retrieval_app;
