"""Draws a recorded `gpulab serve` session in the lab's page, in headless Chromium, and saves a
screenshot: a GPU box with no browser records (tests/test_serve_gpu.py, GPULAB_SERVE_RECORD), a
machine with Chromium draws. The page and xterm.js are the ones `gpulab serve` sends, the bytes
are the session's own, the terminal the same size (serve_helpers.TERMINAL_SIZE).

    python tests/serve_replay.py RECORDING OUT.png
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from aiohttp import web
from serve_helpers import READ_SCREEN, chromium

from gpulab.serve.server import LabServer

CHUNK = 64 * 1024


class ReplayServer(LabServer):
    """Serves the lab's page; its websocket plays the recording and ignores the page's input."""

    def __init__(self, recording: bytes) -> None:
        super().__init__(["true"], "127.0.0.1", 0)
        self.recording = recording

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse()
        await websocket.prepare(request)
        for start in range(0, len(self.recording), CHUNK):
            await websocket.send_bytes(self.recording[start : start + CHUNK])
        async for _message in websocket:
            pass
        return websocket


def _shoot(url: str, out: Path) -> str:
    with chromium() as driver:
        driver.get(url)
        deadline = time.monotonic() + 30
        screen = ""
        while "pi ≈" not in screen:
            if time.monotonic() > deadline:
                raise SystemExit(f"the recording never showed an answer; last seen:\n{screen}")
            time.sleep(0.25)
            screen = driver.execute_script(READ_SCREEN) or ""
        time.sleep(0.5)  # the canvas is drawn on the next animation frame
        driver.save_screenshot(str(out))
        return screen


async def replay(recording: Path, out: Path) -> str:
    runner = web.AppRunner(await ReplayServer(recording.read_bytes())._make_app())
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
        return await asyncio.to_thread(_shoot, url, out)
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python tests/serve_replay.py RECORDING OUT.png")
    print(asyncio.run(replay(Path(sys.argv[1]), Path(sys.argv[2]))))
