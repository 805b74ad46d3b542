-- Taught pairs belong to principals (SYSTEM.md, "People inside a tenant"): each teacher
-- keeps its own pair of a question. Before, one pair per question and database: a
-- principal teaching a question another principal had taught was refused with
-- CONFIRMED_PAIR_TAUGHT_BY_ANOTHER, which told it that someone else had asked and
-- confirmed that very question. Now the same question taught by another principal is
-- stored beside theirs, as any fresh question is; teaching it again replaces the
-- teacher's own (a service key's, NULL, is one teacher: NULLS NOT DISTINCT).
--
-- A principal's answers reuse only the pairs it may list (its own and a service key's),
-- so the pairs of two principals never meet in one answer.
ALTER TABLE sql_confirmed_pairs
    DROP CONSTRAINT sql_confirmed_pairs_tenant_id_database_question_key;
ALTER TABLE sql_confirmed_pairs
    ADD CONSTRAINT sql_confirmed_pairs_question_per_teacher
    UNIQUE NULLS NOT DISTINCT (tenant_id, database, question, taught_by);
