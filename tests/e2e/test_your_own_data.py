"""The README's "Your own data", step by step, as a new user follows it: a second Postgres
plays the user's existing server, a read-only role made by the plain recipe, the database
named in ``SQL_DATABASES`` only (no demo warehouse), ``tandem sql-check``, ``tandem run``,
a key for the user's tenant, a folder of the user's markdown through ``tandem ingest``, and
questions through ``tandem ask`` and ``tandem sql`` answered with citations."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from services.cli._run import SERVICES
from services.common import embedded_server_url
from tests.e2e.test_run import TANDEM, RunSession
from tests.processes import clean_environ, free_ports, model_dir

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

README = Path(__file__).resolve().parents[2] / "README.md"
# Step 1 of the README, verbatim (the role's password is left out: the stand-in server
# trusts local connections).
RECIPE = (
    "CREATE ROLE tandem_ro LOGIN",
    "GRANT CONNECT ON DATABASE shop TO tandem_ro",
    "GRANT USAGE ON SCHEMA public TO tandem_ro",
    "GRANT SELECT ON ALL TABLES IN SCHEMA public TO tandem_ro",
    # tables created later by the role running the recipe are readable too
    "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO tandem_ro",
)
HANDBOOK = {
    "returns.md": "# Returns policy\n\nCustomers may return any item within 45 days of "
    "delivery for a full refund. Opened software is exchanged, not refunded.\n",
    "shipping.md": "# Shipping\n\nOrders ship from the Rotterdam warehouse. Express delivery "
    "takes two working days within the EU.\n",
}


@pytest.fixture(scope="module")
def users_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The user's existing Postgres: its own server, a ``shop`` database with rows, and
    the stock privileges (PUBLIC keeps TEMPORARY)."""
    root = tmp_path_factory.mktemp("users-server")
    admin = embedded_server_url(root)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS shop")
        conn.execute("CREATE DATABASE shop")
    shop = psycopg.conninfo.make_conninfo(admin, dbname="shop")
    with psycopg.connect(shop, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE customers (customer_id int PRIMARY KEY, name text NOT NULL, "
            "country text NOT NULL)"
        )
        conn.execute(
            "CREATE TABLE orders (order_id int PRIMARY KEY, customer_id int NOT NULL "
            "REFERENCES customers, total numeric(10, 2) NOT NULL)"
        )
        conn.execute(
            "INSERT INTO customers VALUES (1, 'Ada', 'NL'), (2, 'Bo', 'DE'), (3, 'Cy', 'NL')"
        )
        conn.execute(
            "INSERT INTO orders SELECT g, 1 + g % 3, 10 * g FROM generate_series(1, 7) AS g"
        )
        conn.execute("ANALYZE")
        for statement in RECIPE:
            conn.execute(statement)
    yield psycopg.conninfo.make_conninfo(shop, user="tandem_ro")


def tandem(env: dict[str, str], *args: str, timeout_s: float = 180) -> str:
    done = subprocess.run(
        [str(TANDEM), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_readme_your_own_data_step_by_step(users_server: str, tmp_path: Path) -> None:
    section = README.read_text().split("## Your own data", 1)[1].split("\n## ", 1)[0]
    steps = section.split("```bash\n", 1)[1].split("```", 1)[0]
    for statement in RECIPE:
        assert statement in steps, statement

    # Step 2: the database, and who may query it.
    env = clean_environ()
    env.update(
        {
            "TANDEM_DATA_DIR": str(tmp_path / "data"),
            "EMBEDDING_MODEL_PATH": str(model_dir()),
            "GRPC_GRACE_PERIOD_S": "5",
            "SQL_DATABASES": f"shop={users_server}",
            "SQL_DATABASE_TENANTS": "shop=acme",
        }
    )
    assert 'SQL_DATABASES="shop=' in steps and 'SQL_DATABASE_TENANTS="shop=acme"' in steps
    for spec, port in zip(SERVICES, free_ports(len(SERVICES)), strict=True):
        env[spec.port_variable] = str(port)

    # Step 3: what the SQL service will do, before starting it.
    assert "\ntandem sql-check\n" in steps
    checked = tandem(env, "sql-check")
    assert re.search(r"^shop\s+serve\s+tenants: acme$", checked, re.M), checked
    assert 'REVOKE TEMPORARY ON DATABASE "shop" FROM PUBLIC' in checked
    # the joins the service will use, declared or inferred (with the evidence)
    assert "join public.orders.customer_id -> public.customers.customer_id (declared)" in checked
    assert "warehouse" not in checked

    # Step 4: start everything.
    assert "\nmake run\n" in steps
    proc = subprocess.Popen(
        [str(TANDEM), "run"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    session = RunSession(proc, env)
    try:
        session.wait_for(r"Ctrl-C stops every service")
        gateway = f"127.0.0.1:{env['GATEWAY_PORT']}"
        env["TANDEM_GATEWAY"] = gateway

        # Step 5: a key for the user's tenant.
        assert "tandem keys create --tenant acme --scope ask,ingest --json" in steps
        created = json.loads(
            tandem(env, "keys", "create", "--tenant", "acme", "--scope", "ask,ingest", "--json")
        )
        env["TANDEM_API_KEY"] = created["api_key"]

        # Step 6: the user's markdown.
        docs = tmp_path / "docs"
        docs.mkdir()
        for name, text in HANDBOOK.items():
            (docs / name).write_text(text)
        step = re.search(r"\ntandem ingest (\S+) --category (\S+)\n", steps)
        assert step is not None
        ingested = tandem(env, "ingest", str(docs), "--category", step.group(2))
        assert "2 documents: 2 included" in ingested, ingested

        # Step 7: questions, answered with citations.
        asks = re.findall(r'^tandem ask "[^"]+"$', steps, re.M)
        sqls = re.findall(r'^tandem sql "[^"]+"$', steps, re.M)
        assert asks and sqls
        for command in asks:
            answered = tandem(env, *shlex.split(command)[1:])
            assert "Citations:" in answered and "returns.md" in answered, answered
        for command in sqls:
            answered = tandem(env, *shlex.split(command)[1:])
            assert "SELECT" in answered.upper() and "row(s)" in answered, answered
            assert "7" in answered, answered  # seven orders
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)
        session.close()
