"""`gpulab serve` without a browser: its flags, who may connect, the "in use" answer, and how a
session that will not quit is ended. The browser test is tests/test_serve_browser.py."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time

import pytest
from serve_helpers import served

from gpulab.cli import main

pytest.importorskip("textual_serve", reason="gpulab serve needs the web extra")

from aiohttp import WSServerHandshakeError  # noqa: E402
from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from gpulab.serve import server as serve  # noqa: E402
from gpulab.serve import session as serve_session  # noqa: E402
from gpulab.serve.access import exposure_warning  # noqa: E402
from gpulab.serve.cli import app_argv  # noqa: E402


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--port", "eighty"], "--port 'eighty' is not a port number"),
        (["--port", "70000"], "--port 70000 is out of range"),
        (["--max-sessions", "0"], "--max-sessions '0' is not allowed"),
        (["--max-sessions", "1.5"], "--max-sessions '1.5' is not allowed"),
        (["--host", " "], "--host is empty"),
    ],
)
def test_bad_flags_exit_2_with_one_line(capsys, flags, says):
    assert main(["serve", *flags]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2", "[::1]"])
def test_loopback_needs_no_warning(host):
    assert exposure_warning(host, 8000) is None


def test_each_session_runs_this_python_s_gpulab_with_the_sample_period():
    assert app_argv(None) == [sys.executable, "-m", "gpulab"]
    assert app_argv(1.5)[-2:] == ["--sample-period", "1.5"]


def test_any_other_host_warns_and_a_taken_port_is_one_line(capsys):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--host", "0.0.0.0", "--port", str(port)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "Anyone who can reach this port can run code" in err[0]
    assert err[1].startswith(f"gpulab: cannot listen on 0.0.0.0:{port}:")
    assert len(err) == 2


def test_without_the_web_extra_it_says_what_to_install(capsys, monkeypatch):
    monkeypatch.delitem(sys.modules, "gpulab.serve.server")
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    assert main(["serve"]) == 2
    assert 'pip install "gpulab[web]"' in capsys.readouterr().err


# ---- the server in this process: nothing is spawned unless a websocket is accepted ---------
async def _client(lab: serve.LabServer) -> TestClient:
    client = TestClient(TestServer(await lab._make_app(), host="127.0.0.1"))
    await client.start_server()
    return client


def _origin(client: TestClient) -> str:
    return f"http://127.0.0.1:{client.port}"


async def test_the_page_points_at_the_host_the_browser_used():
    client = await _client(serve.LabServer(["true"], "127.0.0.1", 0))
    try:
        page = await client.get("/", headers={"Host": "localhost:9000"})  # ssh -L 9000:...
        assert page.status == 200
        assert 'data-session-websocket-url="ws://localhost:9000/ws"' in await page.text()
    finally:
        await client.close()


async def test_a_foreign_host_or_origin_is_refused():
    client = await _client(serve.LabServer(["true"], "127.0.0.1", 0))
    try:
        # A DNS-rebinding page: its name resolves to 127.0.0.1 but the Host header says so.
        assert (await client.get("/", headers={"Host": "evil.example"})).status == 403
        # Another site open in the same browser opening our websocket.
        with pytest.raises(WSServerHandshakeError) as refused:
            await client.ws_connect("/ws", headers={"Origin": "https://evil.example"})
        assert refused.value.status == 403
        with pytest.raises(WSServerHandshakeError):
            await client.ws_connect("/ws")  # no Origin at all
    finally:
        await client.close()


async def test_when_full_the_page_and_the_websocket_say_in_use(monkeypatch):
    monkeypatch.setattr(serve, "SLOT_WAIT_S", 0.2)
    lab = serve.LabServer(["true"], "127.0.0.1", 0, max_sessions=1)
    lab.sessions[object()] = None  # type: ignore[index]  # a session another tab holds
    client = await _client(lab)
    try:
        page = await client.get("/")
        text = await page.text()
        assert page.status == 503 and "gpulab is in use" in text
        assert "--max-sessions 2" in text
        ws = await client.ws_connect("/ws", headers={"Origin": _origin(client)})
        told = await ws.receive(timeout=5)
        assert json.loads(told.data) == ["open_url", {"url": "/in-use", "new_tab": False}]
        await ws.close()
        assert len(lab.sessions) == 1  # nothing was started for it
    finally:
        lab.sessions.clear()
        await client.close()


async def test_a_freed_slot_serves_the_lab_to_a_reload(monkeypatch):
    monkeypatch.setattr(serve, "SLOT_WAIT_S", 3.0)
    lab = serve.LabServer(["true"], "127.0.0.1", 0, max_sessions=1)
    closing = object()
    lab.sessions[closing] = None  # type: ignore[index]  # the reloaded tab's old session
    asyncio.get_running_loop().call_later(0.3, lab.sessions.pop, closing)
    client = await _client(lab)
    try:
        assert (await client.get("/")).status == 200
    finally:
        await client.close()


async def test_an_app_that_dies_at_start_closes_its_page_and_frees_the_slot():
    lab = serve.LabServer([sys.executable, "-c", "raise SystemExit(3)"], "127.0.0.1", 0)
    client = await _client(lab)
    try:
        ws = await client.ws_connect("/ws", headers={"Origin": _origin(client)})
        closed = await ws.receive(timeout=20)  # the page then offers "Restart"
        assert closed.type.name in ("CLOSE", "CLOSED", "CLOSING")
        deadline = time.monotonic() + 10
        while lab.sessions and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not lab.sessions
    finally:
        await client.close()


# ---- ending a session that will not quit ---------------------------------------------------
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"],
    start_new_session=True)
print("__GANGLION__", flush=True)
time.sleep(60)
"""


async def test_an_app_that_ignores_quit_and_sigterm_is_killed_with_its_children(monkeypatch):
    monkeypatch.setattr(serve_session, "QUIT_GRACE_S", 0.3)
    monkeypatch.setattr(serve_session, "TERM_GRACE_S", 0.3)

    async def sink(_data: object) -> None:
        return None

    session = serve_session.LabSession(
        [sys.executable, "-c", STUBBORN],
        write_bytes=sink,
        write_str=sink,
        close=lambda: sink(None),
        download_manager=serve.LabServer(["true"], "127.0.0.1", 0).download_manager,
    )
    await session.start(80, 24)
    assert session.pid is not None
    deadline = time.monotonic() + 20
    while not serve_session.descendants(session.pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    tree = serve_session.descendants(session.pid)
    assert len(tree) == 1, "the stubborn app did not start its child"
    started = time.monotonic()
    await asyncio.gather(session.end(), session.end())  # twice at once: one ending
    assert time.monotonic() - started < 5
    assert session._process is not None and session._process.returncode == -9
    for pid, _tick in tree:
        time.sleep(0.05)  # the kernel and init reap the killed child
        assert serve_session.start_time(pid) is None, f"child {pid} outlived its app"


def test_process_tree_helpers_know_this_process():
    me = os.getpid()
    assert serve_session.start_time(me) is not None
    assert serve_session.start_time(2**22 + 7) is None  # past pid_max: never a process
    assert me in serve_session.children(os.getppid())


def test_sigterm_stops_an_idle_server_cleanly(tmp_path):
    with served(tmp_path) as (proc, _url, log):
        proc.terminate()
        assert proc.wait(timeout=15) == 0, log.read_text()
        assert log.read_text().rstrip().endswith("gpulab serve: stopped")
