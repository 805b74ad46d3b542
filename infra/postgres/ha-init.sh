#!/bin/sh
# First-start initialisation for the compose primary + standby pair (infra/compose.ha.yaml),
# after init.sh: the role the standby streams as (REPLICATION only, no other rights) and
# the replication settings and access rule in the new data directory (ha-node.sh conf).
# Run once, by the image's entrypoint, on the node that initialises the pair.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<EOSQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${REPLICATION_USER:-tandem_replicator}') THEN
        CREATE ROLE ${REPLICATION_USER:-tandem_replicator} LOGIN REPLICATION
            PASSWORD '${REPLICATION_PASSWORD:-tandem_replicator}'
            NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOBYPASSRLS;
    END IF;
END
\$\$;
EOSQL
sh /usr/local/bin/tandem-pg-node.sh conf
