"""Memory the learner's code let go of, held by the check and filled with a NaN pattern, so that
a kernel which still uses it (a CUDA graph replaying on a tensor that was freed after capture)
is seen: its writes change the pattern, and its reads turn into NaN in the outputs.

A CUDA graph keeps the addresses it was captured on, not the tensors. A buffer the graph reads
and writes, referenced only by a function that make_step's caller drops, goes back to PyTorch's
caching allocator when make_step returns; the next tensor anyone allocates may land on it, and
every replay then scribbles over that tensor. Whether that shows as a wrong value depends on who
allocates next, so a check cannot leave it to chance: `FreedMemory` takes every free block of
the caching allocator's shared pools for itself (no one else gets them while it is open),
fills them with POISON, and reports any that changed.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

# A NaN as a float32 but not the one CUDA's arithmetic returns (0x7FFFFFFF), so a kernel that
# writes NaN here is still seen; a large int, nonzero in every byte. kernel_checks fills shared
# memory with it too.
POISON = 0x7FC0DEAD  # below 2**31: the same bits as an int32, the type the held blocks hold
SMALL = 1 << 20  # PyTorch's caching allocator serves requests up to 1 MiB from its small pool
PASSES = 8  # a best-fit allocation may split another block than the one planned: try again
CHUNK = 1 << 24  # elements compared at once: a 16 MiB mask, whatever the size of a held block


@dataclass(frozen=True)
class Request:
    stream: int
    nbytes: int


def plan(segments: list[dict[str, Any]], device: int) -> list[Request]:
    """The allocations that take every free block of the shared pools on `device`, from a
    torch.cuda.memory_snapshot(): a block of a small segment in pieces of at most SMALL (larger
    requests go to the large pool), a block of a large one whole. A graph's private pool is
    left alone (its blocks are the graph's)."""
    out = []
    for seg in segments:
        shared_pool = tuple(seg.get("segment_pool_id", (0, 0))) == (0, 0)
        if seg.get("device", device) != device or not shared_pool:
            continue
        small = seg.get("segment_type") == "small"
        for block in seg.get("blocks", []):
            if block.get("state") != "inactive":
                continue
            left = int(block["size"])
            while left > 0:
                take = min(left, SMALL) if small else left
                out.append(Request(int(seg["stream"]), take))
                left -= take
    return out


class FreedMemory:
    """While open, every block the caching allocator holds free on the device is ours and holds
    POISON. `hold()` takes blocks freed since; `written()` counts the held bytes that changed."""

    def __init__(self, device: Any) -> None:
        import torch  # deferred: the catalog is read in processes that must not import torch

        self.torch = torch
        self.device = torch.device(device)
        self.held: list[Any] = []

    def __enter__(self) -> FreedMemory:
        # Cached segments no tensor uses go back to the driver first: what is left to hold is the
        # free space inside segments still in use (a worker that ran other checks before caches
        # tens of GiB)
        self.torch.cuda.synchronize(self.device)
        self.torch.cuda.empty_cache()
        self.hold()
        return self

    def __exit__(self, *exc: object) -> None:
        self.torch.cuda.synchronize(self.device)  # nothing of ours in flight when it is reused
        self.held.clear()

    def hold(self) -> None:
        torch = self.torch
        gc.collect()  # a tensor in a reference cycle is freed only when the cycle is collected
        torch.cuda.synchronize(self.device)
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        for _ in range(PASSES):
            wanted = plan(torch.cuda.memory_snapshot(), index)
            if not wanted:
                break
            for req in wanted:
                reserved = torch.cuda.memory_reserved(self.device)
                # a block is handed out only to a request made on the stream it was made on
                try:
                    with torch.cuda.stream(self._stream(req.stream)):
                        t = torch.empty(req.nbytes // 4, dtype=torch.int32, device=self.device)
                except torch.cuda.OutOfMemoryError:
                    # it missed the planned block and the device had no room for a new one: what
                    # is held so far stays held; the check goes on (it is ours, not the learner's)
                    torch.cuda.empty_cache()
                    torch.cuda.synchronize(self.device)
                    return
                if torch.cuda.memory_reserved(self.device) > reserved:
                    # it missed the free block it was planned for and took new memory: give that
                    # back and stop, rather than chase the new segment's remainder pass by pass
                    del t
                    torch.cuda.empty_cache()
                    torch.cuda.synchronize(self.device)
                    return
                # filled on the current stream: the learner's stream may be gone by now
                t.fill_(POISON)
                self.held.append(t)
        torch.cuda.synchronize(self.device)

    def _stream(self, handle: int) -> Any:
        """The stream whose pool a block belongs to. The legacy default stream's handle is 0,
        which ExternalStream does not take for the default stream (its requests went to a new
        segment on the H200), so it is asked for by name."""
        torch = self.torch
        default = torch.cuda.default_stream(self.device)
        if handle in (0, default.cuda_stream):
            return default
        return torch.cuda.ExternalStream(handle, device=self.device)

    def written(self) -> int:
        """Bytes of the held memory that no longer hold the pattern, compared CHUNK elements at a
        time: a held block can be tens of GiB (the free end of a segment an earlier check made),
        and comparing it whole made a mask a quarter its size on a device whose free memory we
        hold (an H200 refused 16 GiB with 5 GiB free: cuda-graphs' own reference rejected "out
        of memory" after other checks had run in the same worker)."""
        if not self.held:
            return 0
        torch = self.torch
        changed = torch.zeros((), dtype=torch.int64, device=self.device)
        for t in self.held:
            flat = t.reshape(-1)
            for start in range(0, flat.numel(), CHUNK):
                changed += (flat[start : start + CHUNK] != POISON).sum()
        return 4 * int(changed)  # one readback, not one per block
