-- The language each document is written in (ISO 639-1, told at ingest from its text by
-- services.common.document_language); '' where its text said too little, and for every
-- document stored before this migration until it is ingested again with new content.
-- Search does not read it: a document is found by its own words whatever its language.
ALTER TABLE retrieval_documents
    ADD COLUMN language text NOT NULL DEFAULT '';
