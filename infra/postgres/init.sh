#!/bin/sh
# First-start initialisation of the compose Postgres (pgvector/pgvector:pg16 runs every
# script in /docker-entrypoint-initdb.d once, on an empty data directory).
#
# The extensions are created by the superuser here so the services' migrations find them.
# The login roles the services create for themselves on the embedded server are made here
# with passwords, because the official image requires password authentication over TCP:
# the row-level-security application roles of retrieval, the gateway's conversations and
# audit trail (INSERT and SELECT only) and
# the SQL engine's answer memory (their migrations find them and only grant table rights;
# they can neither own tables nor bypass row-level security) and the SQL engine's
# read-only warehouse reader (the SQL service finds it, creates and loads the demo
# warehouse, and grants it SELECT only).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<EOSQL
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_retrieval_app') THEN
        CREATE ROLE tandem_retrieval_app LOGIN PASSWORD '${RETRIEVAL_APP_PASSWORD}'
            NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_conversation_app') THEN
        CREATE ROLE tandem_conversation_app LOGIN PASSWORD '${CONVERSATION_APP_PASSWORD}'
            NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_audit_app') THEN
        CREATE ROLE tandem_audit_app LOGIN PASSWORD '${AUDIT_APP_PASSWORD}'
            NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_sql_memory_app') THEN
        CREATE ROLE tandem_sql_memory_app LOGIN PASSWORD '${SQL_MEMORY_APP_PASSWORD}'
            NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tandem_reader') THEN
        CREATE ROLE tandem_reader LOGIN PASSWORD '${SQL_READER_PASSWORD}'
            NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS
            CONNECTION LIMIT 64;
    END IF;
    -- A statement's temp files (sorts and hashes past work_mem) bounded; only a
    -- superuser may lift it. Past it: SQLSTATE 53400, reported as SQL_RESOURCE_LIMIT.
    ALTER ROLE tandem_reader SET temp_file_limit = '1GB';
END
\$\$;
EOSQL
