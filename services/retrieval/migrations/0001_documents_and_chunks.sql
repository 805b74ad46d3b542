-- Retrieval store: documents and their redacted, embedded chunks.
--
-- Every table carries tenant_id so row-level security can be switched on later with a
-- policy on current_setting('tandem.tenant_id'), which the service already sets at the
-- start of every transaction.

CREATE TABLE retrieval_documents (
    tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    document_id text NOT NULL CHECK (char_length(document_id) BETWEEN 1 AND 256),
    title text NOT NULL DEFAULT '',
    uri text NOT NULL DEFAULT '',
    category text NOT NULL DEFAULT '',
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    content_type smallint NOT NULL DEFAULT 1,
    -- SHA-256 of the normalised, redacted text (the contract's content hash).
    content_sha256 text NOT NULL,
    -- SHA-256 over everything that shapes the stored rows (text hash, title, uri,
    -- category, metadata, content type, chunking parameters): equal means unchanged.
    fingerprint text NOT NULL,
    -- The embedding model every chunk of this document was embedded with.
    model_name text NOT NULL,
    chunk_count integer NOT NULL CHECK (chunk_count >= 0),
    char_count integer NOT NULL CHECK (char_count >= 0),
    -- Redactions applied at ingest: {"EMAIL_ADDRESS": 2, ...}.
    redactions jsonb NOT NULL DEFAULT '{}'::jsonb,
    create_time timestamptz NOT NULL DEFAULT now(),
    update_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, document_id)
);

-- ListDocuments: newest update first, keyset-paged on (update_time, document_id).
CREATE INDEX retrieval_documents_listing
    ON retrieval_documents (tenant_id, update_time DESC, document_id DESC);
CREATE INDEX retrieval_documents_category ON retrieval_documents (tenant_id, category);
-- The model-mismatch guard looks for a tenant's documents made by another model.
CREATE INDEX retrieval_documents_model ON retrieval_documents (tenant_id, model_name);
-- Metadata containment filters (metadata @> '{"region": "emea"}').
CREATE INDEX retrieval_documents_metadata
    ON retrieval_documents USING gin (metadata jsonb_path_ops);

CREATE TABLE retrieval_chunks (
    chunk_id uuid PRIMARY KEY,
    tenant_id text NOT NULL,
    document_id text NOT NULL,
    ordinal integer NOT NULL CHECK (ordinal >= 0),
    -- Copied from the document so filters and full-text weighting need no join.
    category text NOT NULL DEFAULT '',
    title text NOT NULL DEFAULT '',
    section text NOT NULL DEFAULT '',
    body text NOT NULL,
    model_name text NOT NULL,
    embedding vector(384) NOT NULL,
    -- Title weighted above section and body, so a name in the title outranks a mention.
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, title), 'A')
        || setweight(to_tsvector('english'::regconfig, section), 'B')
        || setweight(to_tsvector('english'::regconfig, body), 'B')
    ) STORED,
    FOREIGN KEY (tenant_id, document_id)
        REFERENCES retrieval_documents (tenant_id, document_id) ON DELETE CASCADE,
    UNIQUE (tenant_id, document_id, ordinal)
);

-- The dense (HNSW, cosine) index is not created here: the service manages it at start
-- from RETRIEVAL_HNSW, RETRIEVAL_HNSW_M and RETRIEVAL_HNSW_EF_CONSTRUCTION (an index over
-- embedding::halfvec(384), pgvector's half-precision indexing), because some prebuilt
-- pgvector binaries cannot run HNSW on every CPU.

-- Full-text search.
CREATE INDEX retrieval_chunks_tsv ON retrieval_chunks USING gin (tsv);
-- Tenant and category filters.
CREATE INDEX retrieval_chunks_tenant_category ON retrieval_chunks (tenant_id, category);
