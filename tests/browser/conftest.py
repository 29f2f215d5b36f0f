"""Browser tests: Debian's real headless Chromium, driven by Playwright, against a real
server process on the real Redis (a private key prefix per test).

Playwright is given the path of Debian's chromium (browser downloads are not possible
here). Screenshots go to ``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

from tests.archive.conftest import _create_schema, _drop_schema, postgres_dsn
from tests.support import (
    REPO_ROOT,
    ServerProcess,
    delete_prefix,
    random_prefix,
    start_server_process,
)

WEB = REPO_ROOT / "client" / "web"
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# A deal whose layout the tests read from the rules engine (the server deals the same cards).
DEAL = "CR1-N-AAAAAAB"
COUNTDOWN_MS = 2500
# A loaded 2-core CI machine runs a server, Redis and two or three pages at once.
expect.set_options(timeout=10_000)


def chromium_path() -> str:
    for candidate in (
        os.environ.get("CRESCENT_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("Debian's chromium is missing: apt-get install chromium (scripts/test does)")


def _build_is_stale() -> bool:
    index = WEB / "dist" / "index.html"
    if not index.exists():
        return True
    built = index.stat().st_mtime
    sources = [*(WEB / "src").rglob("*"), WEB / "build.mjs", WEB / "package-lock.json"]
    return any(p.is_file() and p.stat().st_mtime > built for p in sources)


@pytest.fixture(scope="session", autouse=True)
def built_client() -> None:
    """The tests drive the built page: build it when dist/ is missing or older than src/."""
    if not _build_is_stale():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is missing: the browser client cannot be built (install Node.js 20)")
    if not (WEB / "node_modules").is_dir():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=WEB, check=True
        )
    subprocess.run([npm, "run", "--silent", "build"], cwd=WEB, check=True)


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def prefix() -> Iterator[str]:
    name = random_prefix("web")
    yield name
    delete_prefix(name)


@pytest.fixture
def server(prefix: str) -> Iterator[ServerProcess]:
    with start_server_process(prefix, countdown_ms=COUNTDOWN_MS) as proc:
        yield proc


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


class Pages:
    """Opens pages, each in its own browser context (its own localStorage: its own player)."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.contexts: list[BrowserContext] = []
        self.errors: list[str] = []

    async def open(
        self,
        url: str,
        *,
        locale: str = "en-GB",
        width: int = 1280,
        height: int = 860,
        name: str | None = None,
        touch: bool = False,
    ) -> Page:
        context = await self.browser.new_context(
            viewport={"width": width, "height": height},
            locale=locale,
            has_touch=touch,
            is_mobile=touch,
            device_scale_factor=2 if touch else 1,
        )
        if name:
            await context.add_init_script(
                "if (!localStorage.getItem('crescent.name')) "
                f"localStorage.setItem('crescent.name', {name!r});"
            )
        return await self.open_in(context, url)

    async def open_in(self, context: BrowserContext, url: str) -> Page:
        """``url`` in a page of ``context`` (closed at the end), its errors recorded."""
        self.contexts.append(context)
        page = await context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.set_default_timeout(15000)
        await page.goto(url)
        return page

    async def close(self) -> None:
        for context in self.contexts:
            await context.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Keep each phase's report on the test item, so fixtures can see a failure."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
async def pages(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Pages]:
    opened = Pages(browser)
    try:
        yield opened
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            # What each page showed when the test failed, and its state, for diagnosis.
            ARTIFACTS.mkdir(exist_ok=True)
            for n, context in enumerate(opened.contexts):
                for page in context.pages:
                    stem = ARTIFACTS / f"failed-{request.node.name}-{n}"
                    await page.screenshot(path=f"{stem}.png")
                    state = await page.evaluate(
                        """() => window.crescent ? JSON.stringify({
                            net: crescent.state.net, phase: crescent.phase(),
                            view: crescent.state.view, actions: crescent.game.actions,
                            selected: crescent.board.selected, busy: crescent.board.busy,
                            toast: document.querySelector('.toast')?.textContent}) : null"""
                    )
                    Path(f"{stem}.json").write_text(state or "null")
        await opened.close()
    assert not opened.errors, f"JavaScript errors on the page: {opened.errors}"


__all__ = ["postgres_dsn"]  # the fixture, from tests/archive/conftest.py


@pytest.fixture
async def database_url(postgres_dsn: str) -> AsyncIterator[str]:
    """A private schema of the test PostgreSQL for one test's servers, named in the URL
    (search_path)."""
    schema = await _create_schema(postgres_dsn)
    sep = "&" if "?" in postgres_dsn else "?"
    yield f"{postgres_dsn}{sep}search_path={schema}"
    await _drop_schema(postgres_dsn, schema)
