"""`gpulab serve` in a real browser: headless Chromium (Debian's chromium and chromium-driver)
through selenium loads the lab, runs Monte Carlo with the `r` key, reads the answer off the
page's terminal, and takes a screenshot; then a second session, the "in use" page for a third
tab, closing a tab ends its app and workers, and SIGINT ends the server and the rest.

The page draws the terminal on a canvas (xterm.js with its WebGL/canvas renderer), so the text
is read from xterm's own buffer (tests/serve_helpers.py). Set
GPULAB_SERVE_SCREENSHOT=docs/serve-cpu.png to refresh the README's picture. CI (GPULAB_BROWSER_TEST=required) fails rather than skips when the browser is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from serve_helpers import CHROMEDRIVER, CHROMIUM, READ_SCREEN, chromium, served

from gpulab.serve.session import children, descendants, start_time

SCREEN_TIMEOUT_S = 60.0  # a loaded 2-core CI box: the worker's imports alone can take 10 s


def _browser_or_skip() -> None:
    missing = []
    if CHROMIUM is None or CHROMEDRIVER is None:
        missing.append("chromium and chromium-driver (apt-get install chromium chromium-driver)")
    for module in ("selenium", "textual_serve"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"{module} (pip install -e '.[test]')")
    if not missing:
        return
    reason = "the browser test needs " + ", ".join(missing)
    if os.environ.get("GPULAB_BROWSER_TEST") == "required":
        pytest.fail(reason)
    pytest.skip(reason)


def _wait(what: str, check, timeout: float = SCREEN_TIMEOUT_S, last=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}; last seen:\n{last()}")


def _alive(procs: list[tuple[int, int]]) -> list[int]:
    return [pid for pid, tick in procs if start_time(pid) == tick]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture
def server(tmp_path):
    _browser_or_skip()
    with served(tmp_path, "--max-sessions", "2") as running:
        yield running


@pytest.fixture
def browser():
    with chromium() as driver:
        yield driver


def _new_session(driver, server_pid: int, url: str) -> int:
    """Opens the lab in the current tab; the pid of the app process it started."""
    before = set(children(server_pid))
    driver.get(url)
    new = _wait("a session's app process", lambda: set(children(server_pid)) - before)
    assert len(new) == 1
    return new.pop()


def test_the_lab_in_a_browser(server, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    proc, url, log = server
    screen = lambda: browser.execute_script(READ_SCREEN) or ""  # noqa: E731
    lab_tab = browser.current_window_handle
    app = _new_session(browser, proc.pid, url)

    # The lab's title and panes, then the worker's "ready": `r` before it would be ignored.
    _wait("the lab's panes", lambda: all(p in screen() for p in ("gpulab", "Lessons")), last=screen)
    _wait("the worker to be ready", lambda: "ready in" in screen(), last=screen)
    workers = descendants(app)
    assert any("gpulab.runner.worker.serve" in _cmdline(pid) for pid, _ in workers), workers
    browser.execute_script("document.querySelector('.xterm-helper-textarea').focus()")
    ActionChains(browser).send_keys("r").perform()
    found = _wait("Monte Carlo's answer", lambda: re.search(r"➜ pi ≈ (\d\.\d+)", screen()))
    assert abs(float(found.group(1)) - 3.14159265) < 0.01, screen()
    shot = tmp_path / "serve.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("GPULAB_SERVE_SCREENSHOT"):
        shutil.copy(shot, os.environ["GPULAB_SERVE_SCREENSHOT"])

    # A second tab gets a second session (--max-sessions 2), a third the "in use" page.
    browser.switch_to.new_window("tab")
    second = _new_session(browser, proc.pid, url)
    _wait("the second session's worker", lambda: descendants(second))
    browser.switch_to.new_window("tab")
    browser.get(url)
    assert "gpulab is in use" in browser.page_source
    assert "--max-sessions 3" in browser.page_source

    # Closing the first tab ends its app and every worker under it, within seconds.
    first = [(app, start_time(app)), *descendants(app)]
    browser.switch_to.window(lab_tab)
    browser.close()
    _wait("the closed tab's processes to end", lambda: not _alive(first), timeout=15)
    assert start_time(second) is not None, "closing one tab ended another's session"
    freed = f"session ended (app pid {app})"  # printed once its slot is free again
    _wait("the closed tab's slot", lambda: freed in log.read_text(), timeout=10, last=log.read_text)

    # SIGINT (Ctrl-C) ends the server, its other session and that session's workers.
    rest = [(second, start_time(second)), *descendants(second)]
    assert len(rest) >= 2
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 0, log.read_text()
    _wait("the last session's processes to end", lambda: not _alive(rest), timeout=10)
    assert "gpulab serve: stopped" in log.read_text()


async def test_a_recorded_session_is_drawn_in_the_same_page(tmp_path):
    _browser_or_skip()
    from serve_replay import replay  # imports the web extra

    recording = tmp_path / "session.bin"
    recording.write_bytes("\x1b[2J\x1b[H\x1b[1mgpulab\x1b[0m\r\n➜ pi ≈ 3.141593".encode())
    shot = tmp_path / "replay.png"
    screen = await replay(recording, shot)
    assert screen.splitlines()[:2] == ["gpulab", "➜ pi ≈ 3.141593"]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
