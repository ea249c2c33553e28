"""Debian's Chromium driven by Playwright, as every dashboard browser test starts it.

Playwright cannot download its own browser here, so it drives ``/usr/bin/chromium`` (apt
package ``chromium``, installed by ``.ci/run``) headless, with a fresh profile per launch and
nothing that phones home. Screenshots go to ``$INPLACE_TEST_ARTIFACTS/dashboard`` (default
``build/test-artifacts/dashboard``), where CI keeps them and a person can look at them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, async_playwright
from playwright.sync_api import BrowserContext as SyncBrowserContext
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def artifacts() -> Path:
    base = os.environ.get("INPLACE_TEST_ARTIFACTS")
    root = Path(base) if base else Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
    path = root / "dashboard"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _profile() -> str:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    return tempfile.mkdtemp(prefix="inplace-chromium-")


@asynccontextmanager
async def chromium(*, width: int = 1400, height: int = 1000) -> AsyncIterator[BrowserContext]:
    """A headless Chromium context with a throwaway profile; closed (and the profile removed)
    even when the test fails."""
    profile = _profile()
    try:
        async with async_playwright() as p:
            context = await p.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=ARGS,
                viewport={"width": width, "height": height},
            )
            try:
                yield context
            finally:
                await context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@contextmanager
def chromium_sync(*, width: int = 1400, height: int = 1000) -> Iterator[SyncBrowserContext]:
    """:func:`chromium` for synchronous (end-to-end) tests."""
    profile = _profile()
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=ARGS,
                viewport={"width": width, "height": height},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


CELLS = """(selector) => [...document.querySelectorAll(selector)].map((cell) => ({
    text: cell.textContent.trim(),
    title: cell.getAttribute("title"),
    clipped: cell.scrollWidth > cell.clientWidth,
    width: cell.clientWidth,
    lines: (() => {  // how many lines its text takes: the distinct tops of its line boxes
        const range = document.createRange();
        range.selectNodeContents(cell);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
    })(),
}))"""
"""``page.evaluate(CELLS, selector)``: for each element the selector finds, its text, its
title (what a pointer resting on it shows), whether its text is cut (wider than the
element: ellipsis) and on how many lines it is laid out."""

TITLE_UNDER_POINTER = """() => {
    const hovered = [...document.querySelectorAll(":hover")].pop();
    return hovered?.closest("[title]")?.getAttribute("title") ?? null;
}"""
"""``page.evaluate(TITLE_UNDER_POINTER)``: the title the browser shows as a tooltip where the
pointer rests (the nearest one up from the element under it)."""

OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
"""``page.evaluate(OVERFLOW)``: how far the page is wider than the window (0: no sideways
scrolling)."""


def assert_shown_whole(cells: list[dict[str, Any]], names: set[str]) -> None:
    """Every name of ``names`` is in a cell, none of them cut."""
    shown = {c["text"]: c for c in cells}
    assert names <= shown.keys(), (names - shown.keys(), cells)
    cut = [shown[n] for n in sorted(names) if shown[n]["clipped"]]
    assert not cut, f"cut: {cut}"
