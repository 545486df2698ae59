"""Headless Chromium for the view tests: Debian's ``chromium`` (.ci/run installs it) driven by playwright's
Python API pointed at that executable; ``playwright install`` (a browser download) is never used.

These tests run in their own hatch environment (``hatch run browser:test``); the default suite has no
playwright and leaves this folder out. Screenshots go to ``$STEPFORK_BROWSER_ARTIFACTS`` (default
``build/browser-artifacts``), kept by CI as test artifacts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # the default suite: these run in the browser environment only
    collect_ignore_glob = ["test_*.py"]

CHROMIUM = os.environ.get("STEPFORK_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("STEPFORK_BROWSER_ARTIFACTS", REPO / "build" / "browser-artifacts"))

# Installed before any script of the page: records every script execution a hostile value could cause
# (the payloads call window.__sfHook) and every CSP violation report.
HOOK = """
window.__sfHits = [];
window.__sfHook = function (name) { window.__sfHits.push(String(name)); };
document.addEventListener('securitypolicyviolation', function (e) {
  window.__sfHits.push('csp:' + e.violatedDirective + ':' + e.blockedURI);
});
"""


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@dataclass
class Page:
    """A page with what it asked the network for and the browser's errors."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def open(self, path: Path) -> None:
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector("html[data-ready]")

    def hits(self) -> list[str]:
        return list(self.page.evaluate("window.__sfHits"))

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(target))
        return target


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(HOOK)
    raw = context.new_page()
    holder = Page(raw)
    raw.on("request", lambda request: holder.requests.append(request.url))
    raw.on("pageerror", lambda error: holder.errors.append(str(error)))
    yield holder
    context.close()
    assert not holder.errors, holder.errors
