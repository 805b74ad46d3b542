-- The audit trail: one row per public RPC call — who (key, principal), what (RPC, route,
-- tools, documents cited, tables read) and how it ended — never question text, answers,
-- SQL, literals or snippets (gateway/_audit.py decides what goes in; the columns below
-- hold identifiers and enum names only).
--
-- Append-only for real: the gateway writes and reads it as `tandem_audit_app`, which may
-- INSERT and SELECT and nothing else, and a trigger refuses UPDATE, DELETE and TRUNCATE
-- for every role, the owner included, except the retention purge
-- (`gateway_audit_purge`), the one way a row ever leaves.

CREATE TABLE gateway_audit_events (
    -- Increasing in the order rows were stored: listings page on it.
    event_id bigint GENERATED ALWAYS AS IDENTITY,
    event_time timestamptz NOT NULL,
    -- NULL for a call refused before its key was verified.
    tenant_id text,
    key_id text,
    -- NULL for a service key (the tenant's full view).
    principal_id text,
    rpc text NOT NULL,
    -- tandem.v1.Route and Tool value names (Ask and StreamAsk), empty otherwise.
    route text NOT NULL DEFAULT '',
    tools text[] NOT NULL DEFAULT '{}',
    document_ids text[] NOT NULL DEFAULT '{}',
    tables_read text[] NOT NULL DEFAULT '{}',
    -- The gRPC status code name, the error reason (or the answer's refusal reason), and
    -- the answer's outcome value name where the RPC has one.
    status text NOT NULL,
    reason text NOT NULL DEFAULT '',
    answer_outcome text NOT NULL DEFAULT '',
    request_id text NOT NULL DEFAULT '',
    trace_id text NOT NULL DEFAULT ''
);
-- Two indexes only (every call writes a row): a tenant's listing, newest first, and a
-- block-range index on the time for the purge and time filters (rows arrive in time
-- order, so it stays tiny and nearly free to maintain).
CREATE INDEX gateway_audit_events_listing ON gateway_audit_events (tenant_id, event_id DESC);
CREATE INDEX gateway_audit_events_time ON gateway_audit_events USING brin (event_time);

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_audit_app') THEN
        CREATE ROLE tandem_audit_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE
            NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO tandem_audit_app;
GRANT INSERT, SELECT ON gateway_audit_events TO tandem_audit_app;

-- Reads see one tenant (the admin key's, set as `tandem.tenant_id` per transaction);
-- writes are batches of many tenants' calls, so inserting is not tenant-bound. The owner
-- (the purge function) is not bound: row-level security is enabled, not forced.
ALTER TABLE gateway_audit_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY gateway_audit_events_read ON gateway_audit_events FOR SELECT
    USING (tenant_id = current_setting('tandem.tenant_id', true));
CREATE POLICY gateway_audit_events_write ON gateway_audit_events FOR INSERT
    WITH CHECK (true);

CREATE FUNCTION gateway_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    purge_before text := current_setting('tandem.audit_purge_before', true);
BEGIN
    IF TG_OP = 'DELETE' AND coalesce(purge_before, '') <> '' THEN
        IF OLD.event_time < purge_before::timestamptz THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'gateway_audit_events is append-only: rows leave only through gateway_audit_purge'
        USING ERRCODE = '42501';
END
$$;

CREATE TRIGGER gateway_audit_events_no_change BEFORE UPDATE OR DELETE ON gateway_audit_events
    FOR EACH ROW EXECUTE FUNCTION gateway_audit_append_only();
CREATE TRIGGER gateway_audit_events_no_truncate BEFORE TRUNCATE ON gateway_audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION gateway_audit_append_only();

-- Retention: deletes the rows older than `keep_days` days (at least 1) and returns how
-- many. It runs as the owner, sets the cut-off the trigger checks for this transaction
-- only, and clears it again.
CREATE FUNCTION gateway_audit_purge(keep_days integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    cutoff timestamptz;
    purged bigint;
BEGIN
    IF keep_days IS NULL OR keep_days < 1 THEN
        RAISE EXCEPTION 'keep_days must be at least 1' USING ERRCODE = '22023';
    END IF;
    cutoff := now() - make_interval(days => keep_days);
    PERFORM set_config('tandem.audit_purge_before', cutoff::text, true);
    DELETE FROM public.gateway_audit_events WHERE event_time < cutoff;
    GET DIAGNOSTICS purged = ROW_COUNT;
    PERFORM set_config('tandem.audit_purge_before', '', true);
    RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION gateway_audit_purge(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway_audit_purge(integer) TO tandem_audit_app;
