"""The published report as a person sees it: reports/index.html in a real headless Chromium.

Playwright drives the system's Chromium (Debian's package, /usr/bin/chromium; no browser is
downloaded). The page must open on the summary within the first screen (1280 x 800), every link must
lead somewhere (an element of the page, or a file of the report folder), every figure must load, and
the console must stay free of errors. Where Chromium or Playwright is missing the test skips and says
why; CI (.ci/run installs Chromium) sets CSCONFORM_REQUIRE_BROWSER=1, which turns that skip into a
failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

REPORTS = Path(__file__).resolve().parents[3] / "reports"
CHROMIUM = os.environ.get("CSCONFORM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FIRST_SCREEN = {"width": 1280, "height": 800}


def _browser_or_skip():  # noqa: ANN202
    problem = ""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CSCONFORM_CHROMIUM)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem = problem or "Playwright is not installed (pip install -e '.[test]')"
    if problem:
        if os.environ.get("CSCONFORM_REQUIRE_BROWSER"):
            pytest.fail(f"CSCONFORM_REQUIRE_BROWSER is set but {problem}")
        pytest.skip(problem)
    return sync_playwright


def test_the_report_opens_on_its_summary_and_everything_on_it_resolves():
    sync_playwright = _browser_or_skip()
    index = REPORTS / "index.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=FIRST_SCREEN)
            errors: list[str] = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("requestfailed", lambda request: errors.append(f"could not load {request.url}"))
            page.goto(index.as_uri(), wait_until="load")

            # the summary is the first section, and it is in the first screen
            first_heading = page.locator("h2").first
            assert first_heading.inner_text() == "Summary"
            box = page.locator("#summary table").bounding_box()
            assert box is not None and box["y"] < FIRST_SCREEN["height"], "the summary table is not in the first screen"
            assert page.locator("#summary table tr").count() >= 3
            assert page.locator("#summary").inner_text().count("reference engine") >= 1

            # every link resolves: to an element of this page, or to a file of the report folder
            hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
            assert hrefs, "the page links nothing"
            unresolved = []
            for href in hrefs:
                target = urlparse(href)
                if target.scheme in ("http", "https"):
                    continue  # not the report's own: not followed
                if href.startswith("#"):
                    if not page.evaluate("id => document.getElementById(id) !== null", unquote(href[1:])):
                        unresolved.append(href)
                elif not (REPORTS / unquote(target.path)).is_file():
                    unresolved.append(href)
            assert unresolved == []
            summary_links = page.eval_on_selector_all("#summary a[href^='#']", "links => links.length")
            assert summary_links > 0, "the summary links no rule"

            # every figure loaded
            images = page.eval_on_selector_all(
                "img", "images => images.map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])"
            )
            assert images and [src for src, loaded in images if not loaded] == []
            assert errors == [], f"the console shows errors: {errors}"
        finally:
            browser.close()
