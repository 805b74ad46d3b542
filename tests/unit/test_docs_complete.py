"""The README is a short front door and the reference lives in docs/: these checks keep the
split from losing anything. Every setting a user can set (each variable `.env.example` lists,
each one a service's settings read by name) must be documented somewhere a reader looks, and
every relative link between the pages must lead to a file that exists, so moving a page or
adding a setting without its line fails here rather than in a newcomer's first hour."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SETTINGS_FILES = sorted(
    {*ROOT.glob("services/**/_settings.py"), *ROOT.glob("gateway/**/_settings.py")}
)

ENV_LINE = re.compile(r"^#?\s*([A-Z][A-Z0-9_]{3,})=", re.M)
# A variable read by literal name: env.get_int("X", …), or a bounded reader's _bounded(env, "X", …).
ENV_READ = re.compile(
    r"""(?:\benv\.get_\w+|\b_bounded|\b_finite|\b_choice|\b_name|\b_date)\(\s*(?:env\s*,\s*)?"""
    r"""["']([A-Z][A-Z0-9_]{3,})["']"""
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def documented_text() -> str:
    return "\n".join(page.read_text() for page in PAGES)


def undocumented(names: set[str]) -> list[str]:
    """The names no page spells out whole (``_OCR_LANGUAGES`` after ``RETRIEVAL_OCR`` does not
    count: a reader searching for the variable would not find it)."""
    text = documented_text()
    return sorted(n for n in names if not re.search(rf"(?<![A-Z0-9_]){n}(?![A-Z0-9_])", text))


def env_example_variables() -> set[str]:
    return set(ENV_LINE.findall((ROOT / ".env.example").read_text()))


def settings_variables() -> set[str]:
    return {name for path in SETTINGS_FILES for name in ENV_READ.findall(path.read_text())}


def test_the_pages_exist_and_the_readme_stays_short() -> None:
    assert len(PAGES) > 1, "docs/*.md is missing"
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_every_variable_in_env_example_is_documented() -> None:
    names = env_example_variables()
    assert len(names) > 50  # the pattern still matches the file's layout
    missing = undocumented(names)
    assert not missing, f"in .env.example but in neither README.md nor docs/*.md: {missing}"


def test_every_variable_a_service_reads_is_documented() -> None:
    names = settings_variables()
    assert {"GATEWAY_RATE_PER_S", "SQL_DATABASES", "RETRIEVAL_OCR"} <= names
    missing = undocumented(names)
    assert not missing, f"read by a service's settings, undocumented: {missing}"


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL, or an anchor on the same page
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, f"links to files that do not exist: {broken}"


def test_the_readme_keeps_the_test_command_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "`make test`" in readme
    assert "tandem run --port-base N" in readme
