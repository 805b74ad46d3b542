"""Fixtures for the playground's browser tests: the page built as `make web` builds it, a
stack of processes behind the real edge, and Debian's headless Chromium driven by
Selenium through Debian's chromedriver (no browser or driver is ever downloaded)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.edge import PLAYGROUND_DIR
from services.demo import POLICY, DemoDocument
from tests.processes import ProcessStack

REPO = Path(__file__).resolve().parents[3]
TENANT = "e2e-playground"
# Where CSP violations and console errors are collected, from before the page's own code
# runs (a DevTools script: the page's CSP does not apply to it).
_WATCH = """
window.__tandemCsp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__tandemCsp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""
TRAVEL_POLICY = DemoDocument(
    document_id="travel-policy",
    title="Travel policy",
    uri="https://intranet.example/policies/travel",
    category=POLICY,
    text=(
        "# Travel policy\n\n## Hotels\n\nEmployees may book hotels up to 180 euros per night "
        "in Berlin. Receipts are required for every night.\n"
    ),
    metadata={"owner": "finance"},
)


@pytest.fixture(scope="session")
def playground_page() -> Path:
    """web/playground built into its served directory (scripts/build_web.sh: `npm ci`
    once per lockfile, then an esbuild bundle of a second or less)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed: the playground cannot be built")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "build_web.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (PLAYGROUND_DIR / "index.html").is_file(), done.stdout + done.stderr
    return PLAYGROUND_DIR


@dataclass(frozen=True)
class Playground:
    """The stack's edge (the page and the API on one origin) and a key of a tenant that
    holds one cited document and may query the demo warehouse."""

    stack: ProcessStack
    url: str
    api_key: str


@pytest.fixture(scope="module")
def playground(
    playground_page: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Playground]:
    """A private stack (the last test kills its SQL service)."""
    with ProcessStack(tmp_path_factory.mktemp("playground")) as stack:
        report = stack.load_demo_documents(TENANT, [TRAVEL_POLICY])
        assert report.failed == 0, report.failures
        yield Playground(stack, f"http://{stack.edge_address}", stack.create_key(TENANT))


def _binaries() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip(
            "Debian's chromium and chromium-driver are not installed (`make browser` "
            "installs them as root)"
        )
    return chromium, driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium; each test gets it on a fresh page (see ``open_page``)."""
    chromium, driver_path = _binaries()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--disable-extensions",
        "--no-first-run",
        "--window-size=1200,900",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(20)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _WATCH})
    try:
        yield driver
    finally:
        driver.quit()
