-- An answer recorded in one statement: every answer the SQL service gives is stored (so
-- feedback can refer to it), and this write is on the path of every question. The
-- function sets the tenant for its own transaction, as the store's transactions do, and
-- runs with the caller's rights (SECURITY INVOKER): row-level security checks the row
-- against that tenant exactly as a plain INSERT would. Called alone (autocommit), the
-- statement is its own transaction: the answer and a reused pair's counted use are
-- stored together or not at all, and the tenant setting ends with it.
CREATE FUNCTION sql_record_answer(
    p_tenant_id text,
    p_answer_id uuid,
    p_database text,
    p_question text,
    p_sql text,
    p_intent jsonb,
    p_principal_id text,
    p_used_pair uuid
) RETURNS void
LANGUAGE plpgsql
SECURITY INVOKER
AS $$
BEGIN
    PERFORM set_config('tandem.tenant_id', p_tenant_id, true);
    IF p_used_pair IS NOT NULL THEN
        UPDATE sql_confirmed_pairs SET use_count = use_count + 1
        WHERE tenant_id = p_tenant_id AND pair_id = p_used_pair;
    END IF;
    INSERT INTO sql_answers (tenant_id, answer_id, database, question, sql, intent, principal_id)
    VALUES (p_tenant_id, p_answer_id, p_database, p_question, p_sql, p_intent, p_principal_id);
END
$$;

REVOKE ALL ON FUNCTION sql_record_answer(text, uuid, text, text, text, jsonb, text, uuid)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sql_record_answer(text, uuid, text, text, text, jsonb, text, uuid)
    TO tandem_sql_memory_app;
