-- Each chunk's BM25 length (the positions in its full-text vector), stored.
--
-- Scoring a full-text candidate needs len(c); computing it unnested the chunk's whole
-- vector on every search, for every candidate: on the 783-chunk demo corpus a common word
-- makes most chunks candidates, and that unnest was most of the search statement's time.
-- A generated column cannot read another one, so this repeats `tsv`'s expression (0001)
-- under the same length function the corpus statistics use (0006): the two agree.
ALTER TABLE retrieval_chunks
    ADD COLUMN tsv_length bigint GENERATED ALWAYS AS (
        retrieval_tsvector_length(
            setweight(to_tsvector('english'::regconfig, title), 'A')
            || setweight(to_tsvector('english'::regconfig, section), 'B')
            || setweight(to_tsvector('english'::regconfig, body), 'B')
        )
    ) STORED;
