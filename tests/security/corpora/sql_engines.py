"""Hostile statements of the file engines, written in each engine's own dialect: what
SQLite and DuckDB can reach files, extensions, settings or the process with, and the
system tables they describe themselves in. Each carries the gate rule it is refused
under (the dialect gate, ``services.sql.gate.DialectGate``, on its own; the Postgres
gate in front of it refuses them too)."""

from __future__ import annotations

from services.sql import GateRule

R = GateRule
# {out}: a path in the test's folder, where a file must never appear
SQLITE: list[tuple[str, GateRule]] = [
    ("ATTACH DATABASE '{out}' AS escape", R.QUERY_ROOT),
    ("DETACH DATABASE main", R.QUERY_ROOT),
    ("PRAGMA writable_schema = 1", R.QUERY_ROOT),
    ("PRAGMA query_only = 0", R.QUERY_ROOT),
    ("VACUUM INTO '{out}'", R.QUERY_ROOT),
    ("INSERT INTO companies (company_id, name) VALUES (999, 'x')", R.QUERY_ROOT),
    ("REPLACE INTO companies (company_id, name) VALUES (1, 'x')", R.QUERY_ROOT),
    ("CREATE TEMP TABLE stolen AS SELECT * FROM companies", R.QUERY_ROOT),
    ("DROP TABLE companies", R.QUERY_ROOT),
    ("SELECT 1; DROP TABLE companies", R.SINGLE_STATEMENT),
    ("SELECT load_extension('{out}')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT writefile('{out}', 'data')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT readfile('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT randomblob(1000000000)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT sqlite_version()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT name FROM companies WHERE name = '' OR load_extension('x')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM pragma_table_info('companies')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT sql FROM sqlite_master", R.SYSTEM_SCHEMA),
    ("SELECT name FROM sqlite_schema", R.SYSTEM_SCHEMA),
    ("SELECT name FROM companies UNION SELECT sql FROM sqlite_temp_master", R.SYSTEM_SCHEMA),
    ("SELECT * FROM escape.companies", R.UNKNOWN_TABLE),
    ("SELECT * FROM secrets", R.UNKNOWN_TABLE),
]  # fmt: skip
DUCKDB: list[tuple[str, GateRule]] = [
    ("SELECT * FROM read_csv('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM read_parquet('{out}')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM read_json('{out}')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM read_text('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM read_blob('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM glob('/etc/*')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM read_csv('https://example.invalid/x.csv')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM sqlite_scan('{out}', 'companies')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM '/etc/passwd'", R.UNKNOWN_TABLE),
    ("SELECT getenv('HOME')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT current_setting('enable_external_access')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM duckdb_settings()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM duckdb_secrets()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM query('DROP TABLE companies')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM query_table('companies')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT count(*) FROM range(1000000000000)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT name FROM companies WHERE name = getenv('HOME')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM information_schema.tables", R.SYSTEM_SCHEMA),
    ("SELECT * FROM duckdb_tables", R.SYSTEM_SCHEMA),
    ("COPY companies TO '{out}'", R.QUERY_ROOT),
    ("COPY (SELECT * FROM companies) TO '{out}' (FORMAT parquet)", R.QUERY_ROOT),
    ("INSTALL httpfs", R.QUERY_ROOT),
    ("LOAD httpfs", R.QUERY_ROOT),
    ("ATTACH '{out}' AS escape", R.QUERY_ROOT),
    ("DETACH escape", R.QUERY_ROOT),
    ("SET enable_external_access = true", R.QUERY_ROOT),
    ("PRAGMA enable_profiling", R.QUERY_ROOT),
    ("CALL pragma_version()", R.QUERY_ROOT),
    ("CHECKPOINT", R.QUERY_ROOT),
    ("SUMMARIZE companies", R.QUERY_ROOT),
    ("CREATE TABLE stolen AS SELECT * FROM companies", R.QUERY_ROOT),
    ("INSERT INTO companies (company_id, name) VALUES (999, 'x')", R.QUERY_ROOT),
    ("FROM companies; DELETE FROM companies", R.SINGLE_STATEMENT),
    ("SELECT * FROM escape.main.companies", R.UNKNOWN_TABLE),
]  # fmt: skip

MYSQL: list[tuple[str, GateRule]] = [
    ("SELECT * FROM companies INTO OUTFILE '{out}'", R.PARSE_ERROR),
    ("SELECT name FROM companies INTO DUMPFILE '{out}'", R.PARSE_ERROR),
    ("SELECT name INTO @stolen FROM companies LIMIT 1", R.SELECT_INTO),
    ("SELECT LOAD_FILE('/etc/passwd')", R.FUNCTION_NOT_ALLOWED),
    ("SELECT SLEEP(5)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT name FROM companies WHERE company_id = 1 AND SLEEP(5) = 0", R.FUNCTION_NOT_ALLOWED),
    ("SELECT BENCHMARK(100000000, MD5('x'))", R.FUNCTION_NOT_ALLOWED),
    ("SELECT GET_LOCK('tandem', 10)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT RELEASE_ALL_LOCKS()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT MASTER_POS_WAIT('log', 4, 10)", R.FUNCTION_NOT_ALLOWED),
    ("SELECT USER()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT VERSION()", R.FUNCTION_NOT_ALLOWED),
    ("SELECT @@datadir", R.FUNCTION_NOT_ALLOWED),
    ("SELECT @@global.secure_file_priv", R.FUNCTION_NOT_ALLOWED),
    ("SELECT EXTRACTVALUE(1, CONCAT(0x7e, (SELECT name FROM companies)))", R.FUNCTION_NOT_ALLOWED),
    ("SELECT name FROM companies WHERE company_id = 1 /*!50000 UNION SELECT 1 */", R.PARSE_ERROR),
    ("SELECT name FROM companies # WHERE 1 = 0", R.PARSE_ERROR),
    ("SELECT * FROM mysql.user", R.SYSTEM_SCHEMA),
    ("SELECT * FROM information_schema.processlist", R.SYSTEM_SCHEMA),
    ("SELECT * FROM performance_schema.threads", R.SYSTEM_SCHEMA),
    ("SELECT * FROM companies FOR UPDATE", R.LOCKING_CLAUSE),
    ("SELECT * FROM companies LOCK IN SHARE MODE", R.LOCKING_CLAUSE),
    ("LOAD DATA INFILE '{out}' INTO TABLE companies", R.PARSE_ERROR),
    ("SET GLOBAL max_connections = 1", R.QUERY_ROOT),
    ("SET @a = 1", R.QUERY_ROOT),
    ("LOCK TABLES companies WRITE", R.QUERY_ROOT),
    ("HANDLER companies OPEN", R.PARSE_ERROR),
    ("DO SLEEP(5)", R.PARSE_ERROR),
    ("CALL mysql.rds_kill(1)", R.QUERY_ROOT),
    ("KILL 1", R.QUERY_ROOT),
    ("SHOW GRANTS", R.QUERY_ROOT),
    ("INSERT INTO companies (company_id, name) VALUES (999, 'x')", R.QUERY_ROOT),
    ("REPLACE INTO companies (company_id, name) VALUES (1, 'x')", R.QUERY_ROOT),
    ("CREATE TABLE stolen AS SELECT * FROM companies", R.QUERY_ROOT),
    ("SELECT 1; DROP TABLE companies", R.SINGLE_STATEMENT),
    ("SELECT * FROM other_db.companies", R.UNKNOWN_TABLE),
]  # fmt: skip

BY_ENGINE = {"sqlite": SQLITE, "duckdb": DUCKDB, "mysql": MYSQL}

# Through the service these run as the plain read before the comment: the gate runs the
# statement it regenerated, comments dropped, so MySQL never sees the comment (one row
# comes back, not the UNION's two; no condition is cut off).
COMMENTS_DROPPED = {
    "SELECT name FROM companies WHERE company_id = 1 /*!50000 UNION SELECT 1 */": 1,
    "SELECT name FROM companies # WHERE 1 = 0": 40,
}
