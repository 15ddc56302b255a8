"""Headless Chromium through selenium: Debian's ``chromium`` and ``chromium-driver``.

Nothing is downloaded: the browser and its driver are the system's (``.ci/run``
installs them with apt, as it does Java), found on the PATH or at Debian's paths.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

BROWSERS: Final = ("chromium", "chromium-browser")
DRIVERS: Final = ("chromedriver",)
WINDOW: Final = (1400, 1000)


def _found(names: tuple[str, ...], *fallbacks: str) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path is not None:
            return path
    return next((p for p in fallbacks if Path(p).exists()), None)


def system_chromium() -> tuple[str, str] | None:
    """(browser, driver) paths of the system's Chromium, or None when either is missing."""
    browser = _found(BROWSERS, "/usr/bin/chromium")
    driver = _found(DRIVERS, "/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
    return None if browser is None or driver is None else (browser, driver)


@contextmanager
def headless_chromium(
    paths: tuple[str, str], window: tuple[int, int] = WINDOW
) -> Iterator[webdriver.Chrome]:
    """A headless Chromium session (quit afterwards), ``window`` pixels wide and high."""
    browser, driver_path = paths
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--hide-scrollbars", "--force-device-scale-factor=1",
                 f"--window-size={window[0]},{window[1]}"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
