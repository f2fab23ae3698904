"""`gpulab serve` started for a test: on any free loopback port, its data in tmp, its output in
a log file (a pipe nobody reads could fill and stall it), killed by pid if a test leaves it. And
headless Chromium, with a way to read the page's terminal."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_S = 30.0
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WINDOW = (1280, 800)  # the page's terminal is then 142x36 cells
TERMINAL_SIZE = (142, 36)

# The page draws its terminal on a canvas, so text is read from xterm's own buffer. A script run
# before the page's own notes the terminal as xterm builds it: the public Terminal is the object
# with loadAddon that sets a `_core`.
NOTE_TERMINAL = """
window.__xterms = [];
Object.defineProperty(Object.prototype, '_core', {
  configurable: true,
  set(value) {
    Object.defineProperty(this, '_core', {value, writable: true, configurable: true});
    if (typeof this.loadAddon === 'function') window.__xterms.push(this);
  },
});
"""
READ_SCREEN = """
const t = (window.__xterms || [])[0];
if (!t) return null;
const rows = [];
for (let y = 0; y < t.rows; y++) {
  const line = t.buffer.active.getLine(y);
  rows.push(line ? line.translateToString(true) : '');
}
return rows.join('\\n');
"""


@contextlib.contextmanager
def served(tmp_path: Path, *flags: str) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    """(the server's process, its URL, its log)."""
    log = tmp_path / "serve.log"
    env = dict(os.environ, GPULAB_DATA_DIR=str(tmp_path / "data"))
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpulab", "serve", "--port", "0", *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (found := re.search(r"gpulab serve: (http://\S+)", log.read_text())):
            assert proc.poll() is None, f"gpulab serve exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"gpulab serve did not listen:\n{log.read_text()}"
            time.sleep(0.1)
        yield proc, found.group(1), log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (selenium's webdriver) that notes each page's terminal."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NOTE_TERMINAL})
        # The page asks Google for a font; offline (CI) or not, the test does not wait on it.
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*fonts.googleapis.com*"]})
        yield driver
    finally:
        driver.quit()
