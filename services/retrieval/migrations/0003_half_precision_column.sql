-- Dense search reads a stored half-precision copy of each embedding, kept inline.
--
-- Ranking by `embedding::halfvec(384)` detoasted every float32 vector (pgvector stores
-- `vector` EXTERNAL, out of line) and cast it on every exact scan: 3.9 ms for 783 chunks.
-- A generated halfvec column with MAIN storage is read in place with no cast: 1.2 ms.
-- The float32 column stays the source of truth (re-embedding and model checks use it).
ALTER TABLE retrieval_chunks
    ADD COLUMN embedding_half halfvec(384)
    GENERATED ALWAYS AS (embedding::halfvec(384)) STORED;
ALTER TABLE retrieval_chunks ALTER COLUMN embedding_half SET STORAGE MAIN;

-- The HNSW index moves to the new column; the service recreates it at start from
-- RETRIEVAL_HNSW* (see RetrievalRepository.ensure_vector_index).
DROP INDEX IF EXISTS retrieval_chunks_embedding_hnsw;
