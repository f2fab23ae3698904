"""What FreedMemory sees and takes: a buffer a captured graph writes, freed, then the caching
allocator's snapshot, FreedMemory's plan, each pass's requests and the reserved memory, and
whether a held block covers the freed buffer's address. Usage: python3 bench/probe_freed.py"""

from __future__ import annotations

import torch

from gpulab.exercises import freed as fr

torch.cuda.synchronize()
x = torch.ones(4096, device="cuda")
y = torch.zeros(4096, device="cuda")
buf = torch.zeros(4096, device="cuda")
addr = buf.data_ptr()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    buf.mul_(0.9).add_(x)
    y.add_(buf)
del buf
torch.cuda.synchronize()
print(
    "default stream",
    torch.cuda.default_stream().cuda_stream,
    "current",
    torch.cuda.current_stream().cuda_stream,
)
snap = torch.cuda.memory_snapshot()
for seg in snap:
    keys = {
        k: seg[k]
        for k in ("device", "stream", "segment_type", "segment_pool_id", "total_size", "address")
        if k in seg
    }
    print("segment", keys, [(b["size"], b["state"], b.get("address")) for b in seg["blocks"]][:6])
print("plan", fr.plan(snap, 0))
f = fr.FreedMemory("cuda:0")
r0 = torch.cuda.memory_reserved()
for p in range(3):
    wanted = fr.plan(torch.cuda.memory_snapshot(), 0)
    print("pass", p, "wanted", [(w.stream, w.nbytes) for w in wanted])
    for req in wanted:
        with torch.cuda.stream(f._stream(req.stream)):
            t = torch.empty(req.nbytes // 4, dtype=torch.int32, device="cuda:0")
        t.fill_(fr.POISON)
        f.held.append(t)
        print(
            "   got",
            t.data_ptr(),
            t.numel() * 4,
            "covers buf",
            t.data_ptr() <= addr < t.data_ptr() + t.numel() * 4,
            "reserved +",
            torch.cuda.memory_reserved() - r0,
        )
graph.replay()
torch.cuda.synchronize()
print("by hand: written", f.written(), "y nan", bool(torch.isnan(y).any()))
f.held.clear()
y.zero_()
buf2 = torch.zeros(4096, device="cuda")  # lands where buf was: the replay writes it
print("buf2 at buf's address", buf2.data_ptr() == addr)
del buf2
r1 = torch.cuda.memory_reserved()
with fr.FreedMemory("cuda:0") as g:
    print("hold: reserved +", torch.cuda.memory_reserved() - r1, "blocks", len(g.held))
    graph.replay()
    torch.cuda.synchronize()
    print("FreedMemory: written", g.written(), "y nan", bool(torch.isnan(y).any()))
