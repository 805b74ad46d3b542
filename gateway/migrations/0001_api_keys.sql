-- API keys: only an HMAC of the secret is stored; the key id is public and indexed.
CREATE TABLE IF NOT EXISTS api_keys (
    key_id text PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id),
    secret_hmac bytea NOT NULL,
    label text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX IF NOT EXISTS api_keys_tenant_idx ON api_keys (tenant_id);
