-- The SQL service's answer memory: answers it gave (so feedback can refer to them),
-- feedback on them, and confirmed question→SQL pairs it reuses.
--
-- No foreign key to `tenants`: the SQL service answers any well-formed tenant the
-- gateway vouches for and keeps no registry of its own; isolation comes from the
-- row-level-security policies below, as for the retrieval store.

CREATE TABLE sql_answers (
    tenant_id text NOT NULL CHECK (tenant_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    answer_id uuid NOT NULL,
    database text NOT NULL,
    question text NOT NULL,
    -- Empty when the question was not answered.
    sql text NOT NULL DEFAULT '',
    -- The structured intent (protobuf JSON) when the answer went through one.
    intent jsonb,
    create_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, answer_id)
);
-- Retention purges by age.
CREATE INDEX sql_answers_age ON sql_answers (create_time);

CREATE TABLE sql_confirmed_pairs (
    tenant_id text NOT NULL CHECK (tenant_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    pair_id uuid NOT NULL,
    database text NOT NULL,
    question text NOT NULL,
    -- The question with its literals masked: what was embedded, and what the
    -- word-agreement check compares.
    template text NOT NULL,
    sql text NOT NULL,
    intent jsonb,
    -- 1 taught, 2 helpful, 3 corrected (tandem.v1.ConfirmedPairSource).
    source smallint NOT NULL CHECK (source BETWEEN 1 AND 3),
    model_name text NOT NULL,
    embedding vector(384) NOT NULL,
    use_count bigint NOT NULL DEFAULT 0,
    create_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, pair_id),
    -- Teaching the same question again replaces the pair.
    UNIQUE (tenant_id, database, question)
);
-- Nearest-pair lookups filter by tenant and database first: a tenant holds few pairs
-- per database, so an exact scan of them beats an approximate index.
CREATE INDEX sql_confirmed_pairs_lookup ON sql_confirmed_pairs (tenant_id, database);
CREATE INDEX sql_confirmed_pairs_listing
    ON sql_confirmed_pairs (tenant_id, create_time DESC, pair_id DESC);

CREATE TABLE sql_feedback (
    tenant_id text NOT NULL,
    feedback_id uuid NOT NULL,
    answer_id uuid NOT NULL,
    -- 1 helpful, 2 wrong (tandem.v1.FeedbackRating).
    rating smallint NOT NULL CHECK (rating BETWEEN 1 AND 2),
    corrected_sql text NOT NULL DEFAULT '',
    note text NOT NULL DEFAULT '' CHECK (char_length(note) <= 500),
    pair_id uuid,
    create_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, feedback_id),
    FOREIGN KEY (tenant_id, answer_id)
        REFERENCES sql_answers (tenant_id, answer_id) ON DELETE CASCADE
);

-- Tenant isolation in the database itself, as for the retrieval documents: every
-- transaction of the store sets `tandem.tenant_id` from the verified caller; a query
-- that forgets its tenant filter still sees only that tenant's rows, and no setting
-- means no rows. The service queries as `tandem_sql_memory_app`, which owns nothing and
-- cannot bypass row-level security; give it a password and set
-- SQL_MEMORY_APP_DATABASE_URL where the server requires one.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_sql_memory_app') THEN
        CREATE ROLE tandem_sql_memory_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE
            NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO tandem_sql_memory_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON sql_answers, sql_confirmed_pairs, sql_feedback
    TO tandem_sql_memory_app;

ALTER TABLE sql_answers ENABLE ROW LEVEL SECURITY;
ALTER TABLE sql_answers FORCE ROW LEVEL SECURITY;
ALTER TABLE sql_confirmed_pairs ENABLE ROW LEVEL SECURITY;
ALTER TABLE sql_confirmed_pairs FORCE ROW LEVEL SECURITY;
ALTER TABLE sql_feedback ENABLE ROW LEVEL SECURITY;
ALTER TABLE sql_feedback FORCE ROW LEVEL SECURITY;

CREATE POLICY sql_answers_tenant ON sql_answers
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
CREATE POLICY sql_confirmed_pairs_tenant ON sql_confirmed_pairs
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
CREATE POLICY sql_feedback_tenant ON sql_feedback
    USING (tenant_id = current_setting('tandem.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('tandem.tenant_id', true));
