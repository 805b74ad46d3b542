-- Tenant isolation in the database itself: even a query that forgets its tenant filter
-- sees only the rows of the tenant named by the transaction's `tandem.tenant_id`
-- setting (the repository sets it, from the verified caller, at the start of every
-- transaction). No setting means no rows.
--
-- The service queries as `tandem_retrieval_app`: a login role that owns nothing and
-- cannot bypass row-level security. The role that runs migrations (and owns the tables)
-- is subject to the policies too (FORCE), unless it is a superuser. Roles are
-- cluster-wide, so the role is created only when missing; give it a password (ALTER
-- ROLE ... PASSWORD) and set RETRIEVAL_APP_DATABASE_URL where the server requires one.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_retrieval_app') THEN
        CREATE ROLE tandem_retrieval_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE
            NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO tandem_retrieval_app;
-- Ingest checks that the tenant is registered; registering tenants is not its job.
GRANT SELECT ON tenants TO tandem_retrieval_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON retrieval_documents, retrieval_chunks
    TO tandem_retrieval_app;

ALTER TABLE retrieval_documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE retrieval_documents FORCE ROW LEVEL SECURITY;
ALTER TABLE retrieval_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE retrieval_chunks FORCE ROW LEVEL SECURITY;

-- USING filters what is read, updated and deleted; WITH CHECK refuses writing a row
-- for any other tenant. current_setting(..., true) is NULL (or empty) when unset,
-- which matches nothing.
CREATE POLICY retrieval_documents_tenant ON retrieval_documents
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
CREATE POLICY retrieval_chunks_tenant ON retrieval_chunks
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
