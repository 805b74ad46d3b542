-- The statement a turn's SQL answer ran: a later follow-up that changes its row count,
-- its grouping or a compared value, or asks about its rows, builds on it (the router
-- sends it back to the SQL service, which gates it again). Empty for a semantic answer.
ALTER TABLE gateway_conversation_turns ADD COLUMN sql text NOT NULL DEFAULT '';
