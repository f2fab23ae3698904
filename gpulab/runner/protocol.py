"""The wire between the client and the worker: length-prefixed JSON frames on a dedicated pipe pair.

The worker's stdout and stderr are NOT the protocol: whatever an experiment, a C extension or a
crash handler writes there goes to the client as log lines. Frames travel on two extra pipe fds
handed to the worker (`--fds CMD_READ,EVENT_WRITE`), so a stray print can never corrupt a frame.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON (one object).

Client -> worker (commands, key "cmd"):
    {"cmd": "run", "job": id, "experiment": id, "params": {...}, "device": int}
    {"cmd": "cancel", "job": id}
    {"cmd": "activate"}                       a spare (--standby) creates its CUDA context, says hello
    {"cmd": "shutdown"}
Worker -> client (messages, key "msg"):
    {"msg": "guarded", "pid"}                 a spare has set its parent-death signal (may be stopped)
    {"msg": "standby", "protocol", "pid", "warm", "cuda_context"}   a spare, imports done, waiting
    {"msg": "hello", "protocol": PROTOCOL, "pid", "python", "inventory", "warm": {...timings}}
    {"msg": "event", "event": {...}}          an event of events.py, for the job it names
    {"msg": "retiring", "reason": str}        the worker is about to exit on purpose
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import threading
from typing import Any

from gpulab.core.results import json_safe

PROTOCOL = 1
HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 2**20  # a frame larger than this means the stream is corrupt


class ProtocolError(Exception):
    """The byte stream is not a valid frame sequence."""


def encode(message: dict[str, Any]) -> bytes:
    """`message` as one frame: length header and JSON (NaN and odd types cleaned when plain JSON
    fails)."""
    try:
        body = json.dumps(message, allow_nan=False, separators=(",", ":")).encode()
    except (ValueError, TypeError):
        body = json.dumps(json_safe(message), default=str, separators=(",", ":")).encode()
    return HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """A frame's JSON object; ProtocolError when it is not one."""
    try:
        message = json.loads(body)
    except ValueError as exc:
        raise ProtocolError(f"a frame is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a frame is not a JSON object")
    return message


def frame_length(header: bytes) -> int:
    """The body length a header announces; ProtocolError past MAX_FRAME."""
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME:
        raise ProtocolError(f"frame of {length} bytes is larger than {MAX_FRAME}")
    return length


class FrameWriter:
    """Writes whole frames to a blocking fd; safe to share between threads."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        """Write `message` as one frame, whole, even from several threads."""
        data = memoryview(encode(message))
        with self._lock:
            while data:
                written = os.write(self.fd, data)
                data = data[written:]


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks: list[bytes] = []
    left = n
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            if left == n:
                return None  # a clean EOF between frames
            raise ProtocolError("the stream ended inside a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict[str, Any] | None:
    """The next frame from a blocking fd, or None at EOF."""
    header = _read_exactly(fd, HEADER.size)
    if header is None:
        return None
    body = _read_exactly(fd, frame_length(header))
    if body is None:
        raise ProtocolError("the stream ended inside a frame")
    return decode_body(body)


async def read_frame_async(reader: Any) -> dict[str, Any] | None:
    """The next frame from an asyncio.StreamReader, or None at EOF."""
    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise ProtocolError("the stream ended inside a frame") from None
    try:
        body = await reader.readexactly(frame_length(header))
    except asyncio.IncompleteReadError:
        raise ProtocolError("the stream ended inside a frame") from None
    return decode_body(body)
