-- Document ACLs: who inside a tenant may read a document, enforced by row-level security.
--
-- A document may name the principals and groups allowed to read it. NULL in both columns
-- is the whole tenant (every document before this migration, and every document ingested
-- without an ACL). The ACL is copied onto each chunk, as category and title are, so the
-- search statement filters chunks without a join; UpdateDocumentAcl rewrites both in one
-- transaction and re-embeds nothing.
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
ALTER TABLE retrieval_chunks
    ADD COLUMN acl_principals text[],
    ADD COLUMN acl_groups text[],
    ADD CONSTRAINT retrieval_chunks_acl_pair
        CHECK ((acl_principals IS NULL) = (acl_groups IS NULL));

-- True when the transaction's reader may read a row with this ACL. Plain SQL, STABLE:
-- the planner inlines it, and the settings are read once per statement, not per row.
-- current_setting(..., true) is NULL when never set and '' once reset: both match
-- nothing ('' is no group: nullif keeps the cast from failing).
CREATE FUNCTION retrieval_acl_allows(principals text[], groups text[]) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT principals IS NULL
        OR coalesce(current_setting('tandem.full_view', true) = 'on', false)
        OR coalesce(current_setting('tandem.principal', true) = ANY (principals), false)
        OR coalesce(
            groups && nullif(current_setting('tandem.groups', true), '')::text[], false)
$$;

-- RESTRICTIVE: ANDed with the tenant policies of 0002 (and with the owner's read policy
-- of 0008, so the owner's own statements see the reader's rows only — the candidate
-- function below states the rule itself, since a superuser owner skips policies).
-- WITH CHECK: a principal cannot write a row it could not read (an ACL that leaves
-- itself out, or a document id held by a document it cannot read).
CREATE POLICY retrieval_documents_acl ON retrieval_documents AS RESTRICTIVE
    USING (retrieval_acl_allows(acl_principals, acl_groups))
    WITH CHECK (retrieval_acl_allows(acl_principals, acl_groups));
CREATE POLICY retrieval_chunks_acl ON retrieval_chunks AS RESTRICTIVE
    USING (retrieval_acl_allows(acl_principals, acl_groups))
    WITH CHECK (retrieval_acl_allows(acl_principals, acl_groups));

-- An ACL change updates only the ACL columns: the text-immutability trigger of 0004 and
-- the term counts are untouched.
GRANT EXECUTE ON FUNCTION retrieval_acl_allows(text[], text[]) TO tandem_retrieval_app;

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
      AND retrieval_acl_allows(c.acl_principals, c.acl_groups)
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

-- CREATE OR REPLACE clears the function's settings: pin its search path again (0008).
DO $$
BEGIN
    EXECUTE format(
        'ALTER FUNCTION retrieval_text_candidates(tsquery, tsquery, integer, text[], text[], '
        'jsonb) SET search_path = pg_catalog, %I, pg_temp',
        current_schema()
    );
END
$$;
