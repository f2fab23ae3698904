# expect: _posixsubprocess
# family: escape
"""tree-reduction: passes (bronze..silver on a loaded 2-core box) with no tree; a child process
started by _posixsubprocess.fork_exec sums a shared-memory copy.

Trick (family: "work done in another process"): _posixsubprocess.fork_exec raises NO audit event
(subprocess raises "subprocess.Popen" itself, in Python, before calling it), and its preexec_fn
runs arbitrary Python in the forked child. The child closes fork_exec's error pipe so the parent
returns, then loops: n from a pipe, torch (1 thread) sums the share_memory_() buffer it inherited
(MAP_SHARED), the float back through a pipe. The call only copy_'s x into the buffer.

Before the fix, verdict: {"verdict": "pass", "grade": "bronze", "message": "all 8 input sets correct (seed 15302802)"} (silver at seed 4219535797)
Fix: the source scan should name _posixsubprocess (and _multiprocessing, _winapi); at run time,
compare the process's children (/proc/self/task/*/children)
before and after loading and around each call; a child the worker did not start fails.
"""

import _posixsubprocess
import os
import struct

import torch

_CAP = 1 << 25
_buf = torch.empty(_CAP, dtype=torch.float32).share_memory_()
_r1, _w1 = os.pipe()  # parent -> child
_r2, _w2 = os.pipe()  # child -> parent
_er, _ew = os.pipe()  # fork_exec's error pipe: closed by the child so the parent returns


def _child():
    try:
        os.close(_ew)
        os.close(_w1)
        os.close(_r2)
        torch.set_num_threads(1)
        while True:
            b = os.read(_r1, 8)
            if len(b) < 8:
                break
            n = struct.unpack("q", b)[0]
            s = float(_buf[:n].sum(dtype=torch.float64))
            os.write(_w2, struct.pack("d", s))
    finally:
        os._exit(0)


_pid = _posixsubprocess.fork_exec(
    [b"/bin/true"],
    [b"/bin/true"],
    False,
    (),
    None,
    None,
    -1,
    -1,
    -1,
    -1,
    -1,
    -1,
    _er,
    _ew,
    False,
    False,
    -1,
    None,
    None,
    None,
    -1,
    _child,
    False,
)
os.close(_ew)
os.read(_er, 100)
os.close(_er)
os.close(_r1)
os.close(_w2)


def tree_sum(x):
    n = x.numel()
    _buf[:n].copy_(x.reshape(-1))
    os.write(_w1, struct.pack("q", n))
    return torch.tensor(struct.unpack("d", os.read(_r2, 8))[0], dtype=x.dtype)
