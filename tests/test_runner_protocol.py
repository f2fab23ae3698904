"""The frame format: length-prefixed JSON, one object per frame."""

from __future__ import annotations

import asyncio
import math
import os

import pytest

from gpulab.runner.protocol import (
    HEADER,
    MAX_FRAME,
    FrameWriter,
    ProtocolError,
    encode,
    read_frame,
    read_frame_async,
)


def pipe_with(data: bytes) -> int:
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return r


def test_round_trip_several_frames():
    r, w = os.pipe()
    out = FrameWriter(w)
    messages = [{"msg": "event", "n": i, "text": "é" * i} for i in range(5)]
    for m in messages:
        out.send(m)
    os.close(w)
    got = []
    while (m := read_frame(r)) is not None:
        got.append(m)
    os.close(r)
    assert got == messages


def test_nan_and_inf_travel_as_null():
    r = pipe_with(encode({"x": math.nan, "y": [1.0, math.inf], "z": 2.5}))
    assert read_frame(r) == {"x": None, "y": [1.0, None], "z": 2.5}


def test_eof_between_frames_is_none_inside_a_frame_is_an_error():
    assert read_frame(pipe_with(b"")) is None
    frame = encode({"a": 1})
    with pytest.raises(ProtocolError):
        read_frame(pipe_with(frame[:-2]))
    with pytest.raises(ProtocolError):
        read_frame(pipe_with(frame[:2]))


def test_garbage_is_rejected():
    with pytest.raises(ProtocolError):
        read_frame(pipe_with(HEADER.pack(MAX_FRAME + 1)))
    with pytest.raises(ProtocolError):
        read_frame(pipe_with(HEADER.pack(5) + b"hello"))
    with pytest.raises(ProtocolError):
        read_frame(pipe_with(HEADER.pack(2) + b"[]"))


async def test_async_reader_matches_the_blocking_one():
    reader = asyncio.StreamReader()
    big = {"big": "x" * 300_000}
    reader.feed_data(encode({"a": 1}) + encode(big))
    reader.feed_eof()
    assert await read_frame_async(reader) == {"a": 1}
    assert await read_frame_async(reader) == big
    assert await read_frame_async(reader) is None
