"""Debian's Chromium driven by Playwright for Python, offline: nothing is downloaded (`playwright install` is
never run), the browser talks to 127.0.0.1 only. A missing browser fails the test that needs it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",  # containers (CI) often have a small /dev/shm
]


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium (scripts/setup.sh installs it), headless; AssertionError if it is not installed."""
    from playwright.sync_api import sync_playwright

    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing: scripts/setup.sh installs Debian's chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
