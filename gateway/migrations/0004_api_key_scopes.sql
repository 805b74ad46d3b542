-- Key scopes: what a key may do (ask, ingest, teach, admin). Keys created before scopes
-- existed could do everything, and keep that; a key created from now on can only ask
-- unless it is given more. An UPDATE of scopes is a key change like a revocation (the
-- 0003 trigger announces it), so a narrowed key stops at once.
ALTER TABLE api_keys ADD COLUMN scopes text[] NOT NULL DEFAULT '{ask,ingest,teach,admin}';
ALTER TABLE api_keys ALTER COLUMN scopes SET DEFAULT '{ask}';
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_known
    CHECK (cardinality(scopes) > 0 AND scopes <@ '{ask,ingest,teach,admin}'::text[]);
