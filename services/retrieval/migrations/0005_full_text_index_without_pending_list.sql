-- The full-text GIN index takes each insert into its posting lists at once.
--
-- With GIN's default fast update, new entries wait in an unsorted pending list that every
-- search scans until a vacuum merges it: right after a 100K-chunk load, a hybrid search
-- cost 29 ms of backend CPU instead of 16 ms. Inserting directly costs ingest next to
-- nothing here (about 1.3 ms a chunk either way, HNSW included, where the model takes
-- 20 ms), so search latency no longer depends on how recently a tenant ingested.
ALTER INDEX retrieval_chunks_tsv SET (fastupdate = off);
SELECT gin_clean_pending_list('retrieval_chunks_tsv'::regclass);
