"""Multi-process jobs: one experiment run as N ranks of torch.distributed (one process per GPU).

An experiment's `run` calls `launch(ctx, fn, world_size, args)`. The ranks start with
torch.multiprocessing's own `start_processes` (the machinery behind `mp.spawn`), join one process
group (NCCL on GPUs, gloo on the CPU) through a file store in a private folder, and run
`fn(rank_ctx, *args)`. What `launch` does while they run:

- forwards rank 0's log lines and measurement rows to `ctx`, and the progress of every rank (the
  job's fraction is the slowest rank's; the message names each rank's);
- returns what each rank's `fn` returned, in rank order;
- on a cancel, asks the ranks to stop (they see it at their next `check_cancelled`), waits
  `CANCEL_GRACE_S`, then kills the rest and raises `Cancelled`;
- when any rank dies or raises, kills the others at once and raises `RankFailed` with that rank's
  traceback (or its exit signal).

And if the process that called `launch` dies (killed, or its own parent died): every rank was
started with PR_SET_PDEATHSIG = SIGKILL, so the kernel ends them with it. No rank outlives the job.

The environment reaches the ranks unchanged: NCCL's settings (NCCL_*) are whatever the user set.

Ranks standing by. Starting ranks costs seconds (a process each, CUDA's context, NCCL's
communicator), which a learner checking a collective exercise again and again would pay in every
check. A launch with `warm=True` takes ranks started ahead of it when a set of its shape (world
size, backend) stands by, and notes its shape; `replenish()`, called when the caller is idle
(after a check), makes the sets standing by exactly the shapes taken since: each waits, its
process group joined and one collective run, for one job, then ends like any other rank. So
every job still gets fresh processes (nothing of one learner's code reaches the next check),
the next check finds them started, and nothing starts while a check times. A job that takes no
ranks stops them before it runs (`drop_standby`: their memory would move its figures); so do
`STANDBY_IDLE_S` unused and GPULAB_NO_STANDBY=1.

Every rank has an inbox (its own queue) and an outbox (one queue to the launcher), on the rank's
context: a job that serves commands (gpulab.exercises.rank_pool) uses them, and a rank standing
by gets its job there.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gpulab.core.errors import Cancelled
from gpulab.core.interval import median_interval
from gpulab.core.processes import describe_exit, standby_off, start_time

# The experiment's Context (gpulab.experiments.base): core sits below experiments, so it is
# named here and used by what it has (has_cuda, inventory, progress, log, check_cancelled).
Context = Any

CANCEL_GRACE_S = 0.5  # ranks that ignore a cancel this long are killed (well inside 2 s)
POLL_S = 0.02
PR_SET_PDEATHSIG = 1
RANK_PIDS_ENV = "GPULAB_RANK_PIDS_FILE"  # tests: where launch() writes the rank pids
STANDBY_IDLE_S = 600.0  # ranks standing by this long unused are stopped (their memory freed)
STANDBY_POLL_S = 0.25  # a rank standing by looks at its cancel flag this often
TAKEN_KEPT = 16  # shapes remembered between replenishes (a check takes 4)
# Imported once in the fork server, so a rank starts with them (see preload)
_PRELOAD = ["torch", "torch.distributed", __name__]


class RankFailed(RuntimeError):
    """A rank raised or died; the others were killed."""

    def __init__(self, rank: int, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.rank = rank
        self.traceback = traceback


@dataclass
class RankContext:
    """What a rank's function gets: who it is, where it runs, and a way to talk to the parent."""

    rank: int
    world_size: int
    backend: str  # "nccl" or "gloo"
    device: str  # "cuda:<rank>" or "cpu"
    quick: bool = False
    _events: Any = None  # a multiprocessing queue to the parent (None: run by torchrun)
    _cancel: Any = None  # a multiprocessing Event the parent sets on a cancel
    _sent: float = field(default=0.0, repr=False)
    inbox: Any = None  # this rank's queue from the launcher (None: run by torchrun)
    outbox: Any = None  # the queue every rank answers the launcher on

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress (rate-limited); only rank 0's reaches the UI."""
        # Every rank reports, at most ~20 times a second each, so the pipe stays quiet.
        now = time.monotonic()
        if self._events is not None and (now - self._sent > 0.05 or fraction >= 1.0):
            self._sent = now
            self._events.put(("progress", self.rank, float(fraction), message))
        self.check_cancelled()

    def log(self, line: str) -> None:
        """Log a line from rank 0 (others are silent)."""
        if self.rank != 0:
            return
        if self._events is None:
            print(line, flush=True)
        else:
            self._events.put(("log", 0, line))

    def measurement(self, row: Any) -> None:
        """Send a results row from rank 0 to the job."""
        if self.rank == 0 and self._events is not None:
            self._events.put(("row", 0, row))

    def synchronize(self) -> None:
        """Wait for this rank's GPU work (NCCL); nothing to wait for on gloo."""
        if self.backend == "nccl":
            import torch

            torch.cuda.synchronize()

    @property
    def cancelled(self) -> bool:
        """True once the job was asked to stop."""
        return bool(self._cancel is not None and self._cancel.is_set())

    def check_cancelled(self) -> None:
        """Raise Cancelled once the job was asked to stop."""
        if self.cancelled:
            raise Cancelled("cancelled")


def slowest(rc: RankContext, each: list[float]) -> dict[str, float | int]:
    """Per-iteration seconds from every rank (each rank calls this with its own, in the same
    order): each iteration's slowest rank (a collective or a step ends when its last rank does),
    then over iterations the median with its 95% interval (lo, hi; core.interval), min and max."""
    import torch
    import torch.distributed as dist

    times = torch.tensor(each, dtype=torch.float64, device=rc.device)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    samples = [float(t) for t in times.cpu()]
    out: dict[str, float | int] = dict(median_interval(samples).to_dict())
    out.update(min=min(samples), max=max(samples))
    return out


def backend_for(ctx: Context) -> str:
    """The torch.distributed backend for ctx: nccl on GPUs, gloo on the CPU."""
    return "nccl" if ctx.has_cuda else "gloo"


def gpu_count(ctx: Context) -> int:
    """How many CUDA devices ctx's inventory lists."""
    return sum(1 for d in ctx.inventory.devices if d.kind == "cuda")


def max_world_size(ctx: Context) -> int:
    """One rank per GPU; on the CPU, gloo ranks share the cores: up to 4 even on a small machine
    (a rank mostly waits on its sockets, and 3 or 4 ranks show how a collective scales)."""
    return gpu_count(ctx) if ctx.has_cuda else max(4, min(8, os.cpu_count() or 2))


def die_with_parent(launcher_pid: int) -> None:
    """SIGKILL from the kernel when our parent dies (torch's own choice is SIGINT, which a rank
    inside a collective, or one that ignores SIGINT like the worker, never acts on).

    Our parent is multiprocessing's fork server, which exits when the launching process dies
    (its end of the server's pipe closes), so the launcher's death ends every rank."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    try:
        os.kill(launcher_pid, 0)  # the launcher died before prctl ran
    except ProcessLookupError:
        os._exit(1)
    if os.getppid() == 1:
        os._exit(1)


def _rank_main(index: int, spec: dict[str, Any], fn: Callable[..., Any], args: tuple) -> None:
    die_with_parent(spec["parent"])
    # `kill -USR1 <rank pid>` prints where a stuck rank is (its stderr goes to the job's log).
    faulthandler.register(signal.SIGUSR1, file=sys.__stderr__ or sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    import torch
    import torch.distributed as dist

    backend = spec["backend"]
    device = f"cuda:{index}" if backend == "nccl" else "cpu"
    if backend == "nccl":
        torch.cuda.set_device(index)
    events = spec["events"]
    rc = RankContext(
        index, spec["world_size"], backend, device, spec["quick"], events, spec["cancel"]
    )
    rc.inbox, rc.outbox = spec["inboxes"][index], spec["outbox"]
    kwargs: dict[str, Any] = {}
    if backend == "nccl":
        kwargs["device_id"] = torch.device(device)  # binds the communicator to this rank's GPU
    dist.init_process_group(
        backend,
        init_method=f"file://{spec['store']}",
        rank=index,
        world_size=spec["world_size"],
        **kwargs,
    )
    try:
        if fn is None:  # standing by: the group joined and warmed, the job comes to the inbox
            _warm(rc)
            job = _next_job(rc)
            if job is None:
                return
            fn, args, rc.quick = job
        value = fn(rc, *args)
        events.put(("done", index, value))
    except Cancelled:
        events.put(("cancelled", index, None))
    except BaseException:  # noqa: BLE001 - the rank's failure (a sys.exit too), in its file
        # Leave at once, with the traceback where the launcher reads it: leaving the group
        # while peers wait inside a collective of ours can block, and so can this process's
        # exit (gloo's worker threads are joined), which hid a failure until the deadline
        with open(spec["errors"][index], "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        with contextlib.suppress(Exception):
            events.close()
            events.join_thread()  # what the rank said before it failed reaches the launcher
        os._exit(1)
    if dist.is_initialized():  # a rank's own code may have left the group already
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


def _warm(rc: RankContext) -> None:
    """One small all-reduce, then (NCCL) one batched message each way between every pair of
    ranks: NCCL builds its communicator at the first collective and its point-to-point
    connections at the first send between two ranks (on 2 H200s a first check's ring
    all-reduce cases took 1.2 s, 0.6 s with this); gloo connects every pair at its first
    collective. A rank standing by pays it before its job, not in it. (A lone send needs nothing
    more: with the eager start the checks use, NCCL runs it on the same communicator.)"""
    import torch
    import torch.distributed as dist

    dist.all_reduce(torch.zeros(1, device=rc.device))
    if rc.backend == "nccl" and rc.world_size > 1:
        me, world = rc.rank, rc.world_size
        out, got = torch.zeros(1, device=rc.device), torch.zeros(world, device=rc.device)
        ops = [dist.P2POp(dist.isend, out, p) for p in range(world) if p != me]
        ops += [dist.P2POp(dist.irecv, got[p : p + 1], p) for p in range(world) if p != me]
        for request in dist.batch_isend_irecv(ops):
            request.wait()
    rc.synchronize()


def _next_job(rc: RankContext) -> tuple[Callable[..., Any], tuple, bool] | None:
    """What a rank standing by was given: (fn, args, quick), or None when told to stop."""
    while True:
        try:
            message = rc.inbox.get(timeout=STANDBY_POLL_S)
        except queue.Empty:
            if rc.cancelled:
                return None
            continue
        if message[0] == "job":
            return message[1], message[2], message[3]
        return None


def _kill(processes: list[Any]) -> None:
    for p in processes:
        if p.is_alive():
            with contextlib.suppress(ProcessLookupError, OSError):
                os.kill(p.pid, signal.SIGKILL)
    for p in processes:
        p.join(timeout=2.0)


def _first_failed(errors: list[str], processes: list[Any]) -> int:
    """The rank whose failure is the cause: once one rank fails, its peers fail too (their
    collectives lose a partner, and say so). A rank killed by a signal (no traceback file)
    comes first, then one whose error is its own, then the earliest file."""
    time.sleep(0.1)  # let the peers that follow it write their files
    failed = [r for r, p in enumerate(processes) if p.exitcode not in (None, 0)]
    stamps: dict[int, tuple[int, bool]] = {}
    for r in failed:
        path = errors[r]
        try:
            with open(path, "rb") as f:  # an error about the transport is a peer's echo
                text = f.read()
            lost_peer = any(w in text for w in (b"gloo", b"NCCL", b"Connection", b"closed"))
            stamps[r] = (os.stat(path).st_mtime_ns, lost_peer)
        except (OSError, TypeError):
            return r
    return min(stamps, key=lambda r: (stamps[r][1], stamps[r][0]))


def _failure(errors: list[str], rank: int, exitcode: int) -> RankFailed:
    path = errors[rank]
    tb = ""
    if path and os.path.exists(path):
        with contextlib.suppress(Exception), open(path, "rb") as f:
            tb = str(pickle.load(f))
    if tb:
        last = tb.strip().splitlines()[-1]
        return RankFailed(rank, f"rank {rank} failed: {last}", tb)
    how, _, _ = describe_exit(exitcode)
    return RankFailed(rank, f"rank {rank} {how}; the other ranks were stopped")


def _in_fork_server() -> bool:
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return b"multiprocessing.forkserver" in f.read()
    except OSError:
        return False


def _guard_fork_server() -> None:
    """Imported in the fork server (it preloads this module): the server exits by itself only
    once its pipe from the launcher reaches EOF, which a SIGKILLed launcher's leftover children
    may delay. PDEATHSIG ends it with the launcher; its ranks follow through their own."""
    if _in_fork_server() and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


_guard_fork_server()


def _start_method(backend: str) -> str:
    # Not fork: the launcher has threads (the worker's command reader, its memory sampler,
    # OpenMP's pool after any CPU work) and may hold a CUDA context; a forked rank inherits locks
    # held by those threads and hangs now and then. The fork server is a clean, single-threaded
    # process with torch imported once (the first launch pays for it); each rank forks from it.
    return "forkserver"


def preload(*modules: str) -> None:
    """Name modules every rank will import: the fork server imports them once, if it has not
    started yet, rather than each rank (four ranks importing the same modules at once on a
    2-core box took a second)."""
    for name in modules:
        if name not in _PRELOAD:
            _PRELOAD.append(name)


def _context(method: str) -> Any:
    mp = multiprocessing.get_context(method)
    mp.set_forkserver_preload(list(_PRELOAD))
    _fork_server_running()
    return mp


_keeper_lock = threading.Lock()
_keeper: ThreadPoolExecutor | None = None


def _fork_server_running() -> None:
    """Start the fork server (if it is not running) from a thread that lives as long as this
    process. PDEATHSIG follows the thread that started a process, not the process: a server
    started from a rank pool's thread was killed when that pool ended, and the next launch
    read "unexpected EOF" from it (and ranks standing by, its children, died with it)."""
    global _keeper
    with _keeper_lock:
        if _keeper is None:
            _keeper = ThreadPoolExecutor(1, thread_name_prefix="gpulab-forkserver")
    _keeper.submit(multiprocessing.forkserver.ensure_running).result()


class _Ranks:
    """One set of started ranks and their plumbing (queues, cancel flag, store folder)."""

    def __init__(
        self,
        world_size: int,
        backend: str,
        quick: bool,
        fn: Callable[..., Any] | None,
        args: tuple,
    ) -> None:
        import torch.multiprocessing as tmp

        self.shape = (world_size, backend, quick)
        method = _start_method(backend)
        mp = _context(method)
        self.events = mp.Queue()
        self.cancel = mp.Event()
        self.inboxes = [mp.Queue() for _ in range(world_size)]
        self.outbox = mp.Queue()
        self.folder = tempfile.mkdtemp(prefix="gpulab-ranks-")
        # where a failing rank leaves its traceback (torch's own files are written only by a
        # rank that unwinds to its exit, which ours no longer do)
        self.errors = [os.path.join(self.folder, f"error-{r}.pickle") for r in range(world_size)]
        spec = {
            "parent": os.getpid(),
            "backend": backend,
            "world_size": world_size,
            "store": os.path.join(self.folder, "store"),
            "quick": quick,
            "events": self.events,
            "cancel": self.cancel,
            "inboxes": self.inboxes,
            "outbox": self.outbox,
            "errors": self.errors,
        }
        self.context = tmp.start_processes(
            _rank_main, args=(spec, fn, args), nprocs=world_size, join=False, start_method=method
        )
        self.processes = list(self.context.processes)
        pids_file = os.environ.get(RANK_PIDS_ENV)
        if pids_file:  # every rank started, standing by or not: tests look for leftovers
            with open(pids_file, "a", encoding="utf-8") as f:
                f.write(" ".join(str(p.pid) for p in self.processes) + "\n")

    def usable(self) -> bool:
        """Every rank still there, none ended (a rank standing by may have failed to start, or
        been killed: its exit code reaches us through the fork server a moment after the
        process is gone, so the process table is asked too)."""
        return all(p.exitcode is None and _running(p.pid) for p in self.processes)

    def give(self, fn: Callable[..., Any], args: tuple, quick: bool) -> None:
        """Hand a set standing by its job."""
        for q in self.inboxes:
            q.put(("job", fn, args, quick))

    def close(self) -> None:
        """End the ranks still there and free what they used."""
        for q in self.inboxes:
            with contextlib.suppress(Exception):
                q.put(("stop",))
        self.cancel.set()
        _kill(self.processes)
        for q in (self.events, self.outbox, *self.inboxes):
            with contextlib.suppress(Exception):
                q.close()
                q.cancel_join_thread()  # a rank gone must not hold this process at its exit
        for path in self.context.error_files:
            with contextlib.suppress(OSError):
                os.unlink(path)
        shutil.rmtree(self.folder, ignore_errors=True)


def _running(pid: int) -> bool:
    if os.path.isdir("/proc"):
        return start_time(pid) is not None  # gone, or a zombie the fork server has not reaped
    return True  # no /proc: the exit code alone tells


_standby_lock = threading.Lock()
_standing: list[_Ranks] = []  # sets started ahead, each waiting for one job
_taken: list[tuple[int, str, bool]] = []  # shapes warm launches took since the last replenish
_idle_timer: threading.Timer | None = None


def _take(shape: tuple[int, str, bool]) -> _Ranks | None:
    with _standby_lock:
        _taken.append(shape)
        del _taken[:-TAKEN_KEPT]  # a caller that never replenishes keeps only the latest
        for i, held in enumerate(_standing):
            if held.shape == shape:
                del _standing[i]
                break
        else:
            return None
    if held.usable():
        return held
    held.close()
    return None


def replenish(start: bool = True) -> None:
    """Make the ranks standing by exactly the shapes that warm launches took since the last
    call; where none did (a check that failed before its ranks), leave them as they are. Call
    it when idle: a set starting takes CPU and, on NCCL, GPU memory and a communicator's
    set-up. `start=False` (not idle: a job is waiting) only stops the sets not wanted."""
    global _idle_timer
    with _standby_lock:
        if not _taken and not standby_off():
            return
        wanted = [] if standby_off() else list(_taken)
        _taken.clear()
        keep, stop = [], []
        for held in _standing:
            if held.shape in wanted and held.usable():
                wanted.remove(held.shape)
                keep.append(held)
            else:
                stop.append(held)
        for world_size, backend, quick in wanted if start else []:
            keep.append(_Ranks(world_size, backend, quick, None, ()))
        _standing[:] = keep
        if _idle_timer is not None:
            _idle_timer.cancel()
        _idle_timer = None
        if keep:
            _idle_timer = threading.Timer(STANDBY_IDLE_S, drop_standby)
            _idle_timer.daemon = True
            _idle_timer.start()
    for held in stop:
        held.close()


def drop_standby() -> None:
    """Stop every set of ranks standing by (and forget the shapes taken: none is wanted). The
    worker calls it before a job that takes no ranks, whose figures their memory would move."""
    with _standby_lock:
        stop = list(_standing)
        _standing.clear()
        _taken.clear()
    for held in stop:
        held.close()


def standing_by() -> list[tuple[tuple[int, str, bool], list[int]]]:
    """The sets standing by now: each one's shape (world size, backend, quick) and pids."""
    with _standby_lock:
        return [(held.shape, [p.pid for p in held.processes]) for held in _standing]


def launch(
    ctx: Context,
    fn: Callable[..., Any],
    world_size: int,
    args: tuple = (),
    *,
    backend: str | None = None,
    warm: bool = False,
    on_start: Callable[[list[Any], Any], None] | None = None,
) -> list[Any]:
    """Run `fn(rank_ctx, *args)` on `world_size` ranks; the values they returned, in rank order.

    `warm`: take a set of ranks standing by if one has this shape (see the module doc).
    `on_start(inboxes, outbox)`: called once the ranks are there, with their queues."""
    backend = backend or backend_for(ctx)
    shape = (world_size, backend, bool(ctx.quick))
    ranks_ = _take(shape) if warm else None
    if ranks_ is not None:
        ranks_.give(fn, args, bool(ctx.quick))
    else:
        ranks_ = _Ranks(world_size, backend, bool(ctx.quick), fn, args)
    processes = ranks_.processes
    events, cancel = ranks_.events, ranks_.cancel
    if on_start is not None:
        on_start(ranks_.inboxes, ranks_.outbox)
    fractions = [0.0] * world_size
    messages = [""] * world_size
    shown = ""
    values: dict[int, Any] = {}
    cancel_at: float | None = None
    quiet_since: dict[int, float] = {}
    try:
        while True:
            try:
                kind, rank, *rest = events.get(timeout=POLL_S)
            except queue.Empty:
                kind = ""
            if kind == "progress":
                fractions[rank], messages[rank] = rest[0], rest[1]
                each = " ".join(f"{r}:{f:.0%}" for r, f in enumerate(fractions))
                line = f"{messages[0]} (ranks {each})".strip()
                # Every rank reports the same step: one line per change, not one per rank
                if ctx.on_progress and line != shown:
                    shown = line
                    ctx.on_progress(min(fractions), line)
            elif kind == "log":
                ctx.log(rest[0])
            elif kind == "row":
                ctx.measurement(rest[0])
            elif kind == "done":
                values[rank] = rest[0]
                if len(values) == world_size and cancel_at is None:
                    # every answer is in: what is left of the ranks is leaving their group and
                    # exiting (a tenth of a second a check), which `close` cuts short
                    return [values[r] for r in range(world_size)]
            elif kind == "cancelled":
                cancel_at = cancel_at or time.monotonic()
            if kind:
                continue  # drain everything queued before looking at exits
            if ctx.cancelled and cancel_at is None:
                cancel.set()
                cancel_at = time.monotonic()
            for rank, p in enumerate(processes):
                if p.exitcode not in (None, 0) and cancel_at is None:
                    first = _first_failed(ranks_.errors, processes)
                    code = processes[first].exitcode
                    _kill(processes)
                    raise _failure(ranks_.errors, first, code)
                if p.exitcode == 0 and rank not in values and cancel_at is None:
                    # torch's wrapper exits 0 on a KeyboardInterrupt, with no result: the rest
                    # would wait in a collective forever. Its last message gets a moment to land.
                    quiet_since.setdefault(rank, time.monotonic())
                    if time.monotonic() - quiet_since[rank] > 1.0:
                        _kill(processes)
                        raise RankFailed(rank, f"rank {rank} ended without a result")
            if all(p.exitcode is not None for p in processes):
                if cancel_at is not None:
                    raise Cancelled("cancelled")
                if len(values) < world_size:
                    missing = sorted(set(range(world_size)) - set(values))
                    raise RankFailed(missing[0], f"rank {missing[0]} ended without a result")
                return [values[r] for r in range(world_size)]
            if cancel_at is not None and time.monotonic() - cancel_at > CANCEL_GRACE_S:
                _kill(processes)
    finally:
        ranks_.close()
