-- People inside a tenant (issue 47): who was given an answer, who taught a pair, who
-- gave feedback. NULL is a service key (the tenant's full view, as before).
--
-- A principal sees only the answers it was given (feedback on another's answer is
-- NOT_FOUND, as for a missing one), lists the pairs it taught and those a service key
-- taught, and deletes only its own. Every pair is still reused for every principal: the
-- SQL engine adds the asking principal's row filters when the statement runs, so a pair
-- stores its statement without any.
ALTER TABLE sql_answers ADD COLUMN principal_id text;
ALTER TABLE sql_confirmed_pairs ADD COLUMN taught_by text;
ALTER TABLE sql_feedback ADD COLUMN given_by text;
