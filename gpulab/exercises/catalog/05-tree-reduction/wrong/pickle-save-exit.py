# expect: your code uses _pickle_save
# family: escape
"""Shortcut: torch._C._pickle_save(x) serializes the tensor in C++ (no Tensor method, no ATen op
the modes see); the raw record is viewed in place inside the zip bytes and NumPy sums it."""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import torch


def tree_sum(x: torch.Tensor) -> float:
    b = torch._C._pickle_save(x)
    info = zipfile.ZipFile(io.BytesIO(b)).getinfo("archive/data/0")
    h = info.header_offset
    name_len, extra_len = struct.unpack("<HH", b[h + 26 : h + 30])
    start = h + 30 + name_len + extra_len
    a = np.asarray(memoryview(b)[start : start + info.file_size].cast("f"))
    off = x.storage_offset()
    return float(np.add.reduce(a[off : off + x.numel()], dtype=np.float64))
