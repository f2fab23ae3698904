"""`gpulab serve`: the same lab in a browser tab, through textual-serve (the `web` extra).

Reached over `ssh -L 8000:localhost:8000 box`, it gives a learner whose terminal has poor fonts
or no mouse the lab in a browser. Whoever reaches the port can run code on this GPU, so:
- it binds 127.0.0.1 unless told otherwise, and says so loudly when told;
- the page and its websocket answer only to a loopback Host (a DNS-rebinding page cannot reach
  them) and the websocket only to its own page's Origin (another site open in the same browser
  cannot drive the lab: websockets are not bound by the same-origin policy);
- one session at a time by default: each starts its own worker and CUDA context, so a second tab
  gets an "in use" page rather than a second context (`--max-sessions N` raises the limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import signal
from typing import Any

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from textual_serve.server import Server, to_int

from gpulab.serve.access import is_loopback
from gpulab.serve.session import LabSession

SLOT_WAIT_S = 3.0  # a reload closes its old session as it asks for the page: give it this long
BUSY_PATH = "/in-use"


def busy_page(max_sessions: int) -> str:
    """The page a browser gets while every session is taken."""
    who = (
        "Another browser tab has this lab open"
        if max_sessions == 1
        else f"Other browser tabs hold all {max_sessions} sessions of this lab"
    )
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gpulab: in use</title>
<style>body{{background:#0c181f;color:#e8eef2;font:16px/1.5 monospace;margin:4em auto;
max-width:42em}}a{{color:#7fd3ff}}code{{background:#12232d;padding:0 .3em}}</style></head>
<body><h1>gpulab is in use</h1>
<p>{html.escape(who)}. Each session starts its own
worker process and CUDA context on the GPU, so this server runs at most {max_sessions} at a
time.</p>
<p>Close a tab that has it (its session ends within seconds) and <a href="/">try again</a>, or
restart the server with <code>gpulab serve --max-sessions {max_sessions + 1}</code>.</p>
</body></html>"""


class LabServer(Server):
    """textual-serve's server with a session limit, the Host and Origin checks, and an end to
    every session's processes when it stops."""

    def __init__(self, argv: list[str], host: str, port: int, max_sessions: int = 1) -> None:
        super().__init__(" ".join(argv), host=host, port=port, title="gpulab")
        self.argv = argv
        self.max_sessions = max_sessions
        self.sessions: dict[LabSession, web.WebSocketResponse] = {}
        self._ending: set[asyncio.Future[None]] = set()  # held: the loop keeps weak refs only
        self.url = ""  # set once listening: the real port when --port 0 asked for any

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.router.add_get(BUSY_PATH, self.handle_busy)
        return app

    # ---- who may connect ---------------------------------------------------------------
    def _host_refused(self, request: web.Request) -> bool:
        """On loopback, a Host header naming anything else is a DNS-rebinding page."""
        return is_loopback(self.host) and not is_loopback(request.url.host or "")

    @staticmethod
    def _origin_refused(request: web.Request) -> bool:
        origin = request.headers.get("Origin", "")
        _, _, authority = origin.partition("://")
        return authority.lower() != request.host.lower()

    def _full(self) -> bool:
        return len(self.sessions) >= self.max_sessions

    async def _wait_for_slot(self) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SLOT_WAIT_S
        while self._full() and loop.time() < deadline:
            await asyncio.sleep(0.1)
        return not self._full()

    # ---- pages -------------------------------------------------------------------------
    async def handle_busy(self, request: web.Request) -> web.Response:
        """The "every session is taken" page (503, retry in 5 s)."""
        if self._host_refused(request):
            raise web.HTTPForbidden(text="gpulab serve: this Host is not served")
        return web.Response(
            status=503,
            text=busy_page(self.max_sessions),
            content_type="text/html",
            headers={"Retry-After": "5", "Cache-Control": "no-store"},
        )

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The lab's page, once a session slot is free (else the busy page)."""
        if self._host_refused(request):
            raise web.HTTPForbidden(text="gpulab serve: this Host is not served")
        if not await self._wait_for_slot():
            return await self.handle_busy(request)
        # URLs from the Host the browser used, not the bind address: 0.0.0.0 or a forwarded
        # port (ssh -L 9000:localhost:8000) would otherwise point the page at the wrong place.
        base = f"{request.scheme}://{request.host}"
        ws_scheme = "wss" if request.scheme == "https" else "ws"
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{ws_scheme}://{request.host}/ws",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """Run one lab session over this websocket, from our own page and Host only."""
        if self._host_refused(request) or self._origin_refused(request):
            raise web.HTTPForbidden(text="gpulab serve: the lab answers only its own page")
        websocket = web.WebSocketResponse(heartbeat=15)
        await websocket.prepare(request)
        if self._full():  # two tabs that loaded the page at once: the later one is told
            await websocket.send_json(["open_url", {"url": BUSY_PATH, "new_tab": False}])
            await websocket.close(code=WSCloseCode.TRY_AGAIN_LATER, message=b"in use")
            return websocket
        session = LabSession(
            self.argv,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
        )
        self.sessions[session] = websocket  # counted before the first await: no race
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        try:
            await session.start(width, height)
            print(f"gpulab serve: session started (app pid {session.pid})", flush=True)
            await self._process_messages(websocket, session)
        except (asyncio.CancelledError, ConnectionResetError):
            pass
        finally:
            # A task of its own, shielded: aiohttp cancels this handler when the browser's
            # connection drops, and the slot must stay taken until the processes have ended.
            ending = asyncio.ensure_future(self._finish(session, websocket))
            self._ending.add(ending)
            ending.add_done_callback(self._ending.discard)
            await asyncio.shield(ending)
        return websocket

    async def _finish(self, session: LabSession, websocket: web.WebSocketResponse) -> None:
        try:
            await session.end()
        finally:
            self.sessions.pop(session, None)
            with contextlib.suppress(Exception):
                await websocket.close()
            print(f"gpulab serve: session ended (app pid {session.pid})", flush=True)

    # ---- life ----------------------------------------------------------------------------
    async def on_startup(self, app: web.Application) -> None:
        """Nothing: the banner is printed once the real address is known."""
        pass  # the banner is printed once the real address is known

    async def on_shutdown(self, app: web.Application) -> None:
        """End every session and close its websocket."""
        if self.sessions:
            print(f"gpulab serve: ending {len(self.sessions)} session(s)", flush=True)
        await asyncio.gather(*(s.end() for s in list(self.sessions)), return_exceptions=True)
        for websocket in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"server stopped")

    async def run(self) -> None:
        """Serves until SIGINT or SIGTERM, then ends every session and returns."""
        runner = web.AppRunner(await self._make_app(), access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
            port = runner.addresses[0][1]
            host = f"[{self.host}]" if ":" in self.host else self.host
            self.url = f"http://{host}:{port}"
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            print(f"gpulab serve: {self.url}  (Ctrl-C stops)", flush=True)
            print(
                f"  from another machine: ssh -L {port}:localhost:{port} THIS-HOST, "
                f"then open http://localhost:{port}",
                flush=True,
            )
            await stop.wait()
        finally:
            await runner.cleanup()
