"""A chart for a SQL result, chosen by fixed rules over the columns' types.

Never generated code: systems that let a model write plotting code and ran it lost their
users' trust (a code-execution CVE in one of them). The choice reads only the Postgres
type of each column, whether a column names an identifier, and how many rows there are;
the drawing is a Vega-Lite v5 specification with the rows inlined, for any client to
render.

| columns (ids and codes count as categories) | chart |
|---|---|
| no rows; one value; more than three columns | none, and why |
| a time column and a measure (± one category of ≤ 10 values) | line (one per category) |
| (a time column: a date, or a column of year numbers, ``reads_as_years``) | |
| one category and a measure | bar, largest first, beyond 20 the rest as "Other" |
| one category and a share (percentage, share, ratio, rate) | bar with a percent axis |
| two measures (± one category, as the tooltip) | scatter (≥ 3 rows) |
| anything else | none, naming the types |
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.common.periods import reads_as_years

VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
# Bars drawn before the rest are summed as "Other".
MAX_BARS = 20
# Lines drawn at most (one per category value) before a line chart is refused.
MAX_SERIES = 10
# Columns a chart can show at once; more reads better as a table.
MAX_COLUMNS = 3

_TEMPORAL = re.compile(r"^(?:date|timestamp|time)\b", re.IGNORECASE)
_QUANTITATIVE = re.compile(
    r"^(?:smallint|integer|bigint|numeric|decimal|real|double precision|money|int\d?|float\d?)",
    re.IGNORECASE,
)
# A measure named as a share of a whole: its bars read as percentages.
_SHARE = re.compile(r"percent|pct|share|ratio|rate", re.IGNORECASE)
# An integer column named like an identifier or a code is a category, not a measure.
_IDENTIFIER = re.compile(r"(?:^|_)(?:id|code|year|zip|phone|number|no)$", re.IGNORECASE)


@dataclass(frozen=True)
class ChartChoice:
    """The kind (line, bar, scatter or none), the Vega-Lite spec, and why."""

    kind: str
    spec: dict[str, Any] | None
    reason: str

    def vega_lite(self) -> str:
        return json.dumps(self.spec, separators=(",", ":"), default=str) if self.spec else ""


def choose_chart(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> ChartChoice:
    """The chart for ``rows`` under ``columns`` (name, Postgres type); plain Python values
    (numbers as int/float/str decimals, times as ISO text)."""
    if not rows:
        return ChartChoice("none", None, "no rows to draw")
    if len(columns) == 1 and len(rows) == 1:
        return ChartChoice("none", None, "one value: nothing to draw")
    if len(columns) > MAX_COLUMNS:
        return ChartChoice("none", None, f"{len(columns)} columns: a table reads better")
    fields = _fields([name for name, _ in columns])
    # a column of year numbers ("per year" is the year's number, 2023) is time, not a
    # category: it is drawn on a time axis, read as years (``reads_as_years``)
    years = {i for i, (name, _) in enumerate(columns) if reads_as_years(name, [r[i] for r in rows])}
    roles = ["temporal" if i in years else _role(n, t) for i, (n, t) in enumerate(columns)]
    times = [i for i, role in enumerate(roles) if role == "temporal"]
    measures = [i for i, role in enumerate(roles) if role == "quantitative"]
    categories = [i for i, role in enumerate(roles) if role == "nominal"]
    values = [{fields[i]: _plain(row[i], roles[i]) for i in range(len(columns))} for row in rows]
    if len(times) == 1 and len(measures) == 1 and len(categories) <= 1:
        return _line(
            fields,
            time=times[0],
            measure=measures[0],
            categories=categories,
            values=values,
            columns=columns,
            years=times[0] in years,
        )
    if len(categories) == 1 and len(measures) == 1 and not times:
        names = dict(zip(fields, (name for name, _ in columns), strict=True))
        return _bar(fields[categories[0]], fields[measures[0]], values, names)
    if len(measures) == 2 and not times and len(categories) <= 1:
        if len(rows) < 3:
            return ChartChoice("none", None, "two measures over fewer than 3 rows")
        return _scatter(fields, measures, categories, values)
    kinds = ", ".join(f"{name} ({role})" for (name, _), role in zip(columns, roles, strict=True))
    return ChartChoice("none", None, f"no chart fits these columns: {kinds}")


def _role(name: str, data_type: str) -> str:
    if _TEMPORAL.match(data_type):
        return "temporal"
    if _QUANTITATIVE.match(data_type) and not _IDENTIFIER.search(name):
        return "quantitative"
    return "nominal"


def _fields(names: Sequence[str]) -> list[str]:
    """Vega-Lite field names: dots and brackets would read as paths; repeats get a suffix."""
    out: list[str] = []
    for name in names:
        field = re.sub(r"[.\[\]\\]", "_", name) or "column"
        while field in out:
            field += "_2"
        out.append(field)
    return out


def _plain(value: Any, role: str) -> Any:
    """A value Vega-Lite reads: measures as numbers (exact decimals as text otherwise)."""
    if value is None or role != "quantitative" or isinstance(value, int | float):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _base(mark: str, values: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "$schema": VEGA_LITE_SCHEMA,
        "data": {"values": values},
        "mark": {"type": mark, "tooltip": True},
    }


def _line(
    fields: Sequence[str],
    *,
    time: int,
    measure: int,
    categories: Sequence[int],
    values: list[dict[str, Any]],
    columns: Sequence[tuple[str, str]],
    years: bool = False,
) -> ChartChoice:
    """``years``: the time column holds year numbers (2023), which Vega-Lite would read
    as milliseconds since 1970 unless told they are years."""
    spec = _base("line", sorted(values, key=lambda v: str(v[fields[time]])))
    spec["mark"]["point"] = True
    x: dict[str, Any] = {"field": fields[time], "type": "temporal", "title": columns[time][0]}
    if years:
        spec["data"]["format"] = {"parse": {fields[time]: "date:'%Y'"}}
        x["timeUnit"] = "year"
    spec["encoding"] = {
        "x": x,
        "y": {"field": fields[measure], "type": "quantitative", "title": columns[measure][0]},
    }
    reason = f"{columns[measure][0]} over {columns[time][0]}"
    if categories:
        series = {v[fields[categories[0]]] for v in values}
        if len(series) > MAX_SERIES:
            return ChartChoice(
                "none", None, f"{len(series)} series of {columns[categories[0]][0]}: too many lines"
            )
        spec["encoding"]["color"] = {"field": fields[categories[0]], "type": "nominal"}
        reason += f", one line per {columns[categories[0]][0]}"
    return ChartChoice("line", spec, reason)


def _bar(
    category: str, measure: str, values: list[dict[str, Any]], names: Mapping[str, str]
) -> ChartChoice:
    """``names``: each field's column name, for titles and the reason."""
    ranked = sorted(values, key=lambda v: -(v[measure] or 0) if _number(v[measure]) else 0)
    reason = f"{names[measure]} per {names[category]}"
    if len(ranked) > MAX_BARS:
        rest = sum(v[measure] or 0 for v in ranked[MAX_BARS:] if _number(v[measure]))
        others = len(ranked) - MAX_BARS
        ranked = [*ranked[:MAX_BARS], {category: f"Other ({others})", measure: rest}]
        reason += f"; the largest {MAX_BARS}, the other {others} summed"
    spec = _base("bar", ranked)
    y: dict[str, Any] = {"field": measure, "type": "quantitative", "title": names[measure]}
    if _SHARE.search(names[measure]):
        numbers = [v[measure] for v in ranked if _number(v[measure])]
        if numbers and all(0 <= n <= 1 for n in numbers):
            y["axis"] = {"format": ".0%"}  # fractions of one, drawn as percentages
        else:
            y["title"] = f"{names[measure]} (%)"
        reason += " as a share of the whole"
    spec["encoding"] = {
        "x": {"field": category, "type": "nominal", "sort": None, "title": names[category]},
        "y": y,
    }
    return ChartChoice("bar", spec, reason)


def _scatter(
    fields: Sequence[str],
    measures: Sequence[int],
    categories: Sequence[int],
    values: list[dict[str, Any]],
) -> ChartChoice:
    spec = _base("point", values)
    x, y = fields[measures[0]], fields[measures[1]]
    spec["encoding"] = {
        "x": {"field": x, "type": "quantitative"},
        "y": {"field": y, "type": "quantitative"},
    }
    if categories:
        spec["encoding"]["tooltip"] = [
            {"field": fields[categories[0]], "type": "nominal"},
            {"field": x, "type": "quantitative"},
            {"field": y, "type": "quantitative"},
        ]
    return ChartChoice("scatter", spec, f"{y} against {x}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
