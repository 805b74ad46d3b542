-- Conversations: each Ask may continue one, so a follow-up ("and in 2024?", "the second
-- one") can be resolved against the turns before it. A turn keeps what a later question
-- may refer to (the question, the standalone question answered, the route, result
-- members, SQL fingerprints, cited chunks), never the answer text.
--
-- No foreign key to `tenants`: isolation comes from the row-level-security policies
-- below, as for the retrieval store and the SQL answer memory.

CREATE TABLE gateway_conversations (
    tenant_id text NOT NULL CHECK (tenant_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    conversation_id uuid NOT NULL,
    -- The first question, shortened: what a listing shows.
    title text NOT NULL DEFAULT '',
    turn_count integer NOT NULL DEFAULT 0,
    create_time timestamptz NOT NULL DEFAULT now(),
    -- Retention counts from the last turn: an active conversation does not expire.
    update_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, conversation_id)
);
CREATE INDEX gateway_conversations_listing
    ON gateway_conversations (tenant_id, update_time DESC, conversation_id DESC);

CREATE TABLE gateway_conversation_turns (
    tenant_id text NOT NULL,
    conversation_id uuid NOT NULL,
    turn_index integer NOT NULL CHECK (turn_index >= 1),
    question text NOT NULL,
    resolved_question text NOT NULL,
    -- tandem.v1.Route and tandem.v1.FollowUpKind values.
    route smallint NOT NULL DEFAULT 0,
    follow_up_kind smallint NOT NULL DEFAULT 0,
    members text[] NOT NULL DEFAULT '{}',
    sql_fingerprints text[] NOT NULL DEFAULT '{}',
    cited_chunk_ids text[] NOT NULL DEFAULT '{}',
    row_count integer NOT NULL DEFAULT 0,
    create_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, conversation_id, turn_index),
    FOREIGN KEY (tenant_id, conversation_id)
        REFERENCES gateway_conversations (tenant_id, conversation_id) ON DELETE CASCADE
);

-- The gateway queries conversations as `tandem_conversation_app`, a login role that owns
-- nothing and cannot bypass row-level security; every transaction sets
-- `tandem.tenant_id` from the verified API key first, so a query that forgot its tenant
-- filter still sees only that tenant's rows, and no setting means no rows. Give it a
-- password and set GATEWAY_CONVERSATION_APP_DATABASE_URL where the server requires one.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_conversation_app') THEN
        CREATE ROLE tandem_conversation_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE
            NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO tandem_conversation_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON gateway_conversations, gateway_conversation_turns
    TO tandem_conversation_app;

ALTER TABLE gateway_conversations ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway_conversations FORCE ROW LEVEL SECURITY;
ALTER TABLE gateway_conversation_turns ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway_conversation_turns FORCE ROW LEVEL SECURITY;

CREATE POLICY gateway_conversations_tenant ON gateway_conversations
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
CREATE POLICY gateway_conversation_turns_tenant ON gateway_conversation_turns
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
