"""The worker process: `python -m gpulab.runner.worker.serve --fds CMD,EVENTS [--device N] [--parent PID]
[--standby]`.

Started by the client's WorkerSupervisor (runner/client/supervisor.py). It imports the compute
stack and creates the CUDA context once (pre-warm), says hello on its event pipe, then runs jobs one at a time with
`gpulab.experiments.inline`.
With --standby it is the client's spare: it does the imports, says `standby` and waits, holding
no CUDA context (so no GPU memory), until an `activate` command; then it creates the context and
says hello like any worker. A killed worker is so replaced in a fraction of a second, not the
seconds an import of torch takes.
A reader thread takes commands while a job runs, so a cancel sets the cooperative flag at once.
The CUDA context's life is in cuda.py, the process's plumbing (parent death, forked
children, captured output) in process.py.

Why it exits when it does:
- EOF on the command pipe (the client closed it, or the client process died): exit at once.
- Linux: PR_SET_PDEATHSIG, so even a parent that leaked the pipe to another process kills us.
- After an illegal address (or any error that leaves CUDA unusable) the context is dead for
  good; the worker reports the failure, says it is retiring and exits, and the client starts a
  new one.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gc
import importlib
import os
import queue
import signal
import sys
import threading
import time
import traceback
from typing import Any, TextIO

from gpulab.core import events as ev
from gpulab.core import memory, peaks, ranks
from gpulab.core.devices import detect
from gpulab.core.results import RETIRE_WORKER
from gpulab.experiments.inline import run_job
from gpulab.experiments.registry import get
from gpulab.runner.protocol import PROTOCOL, FrameWriter, read_frame
from gpulab.runner.worker.cuda import cuda_broken, init_cuda, primary_context_active, release_memory
from gpulab.runner.worker.process import LineStream, close_fds, die_with_parent, host_rss

EXIT_RETIRED = 3  # the worker left on purpose (dead CUDA context); the client replaces it
MEMORY_INTERVAL_S = 0.25  # readings during a job: 4 per second


class Worker:
    """The worker's state: the event pipe, the command queue, the job running and its cancel flag."""

    def __init__(self, out: FrameWriter, device_index: int) -> None:
        self.out = out
        self.device_index = device_index
        self.commands: queue.Queue[dict[str, Any]] = queue.Queue()
        self.current: str = ""
        self.cancel_flag = threading.Event()
        self.cancel_asked: set[str] = set()  # a cancel may overtake the job it names
        self.inventory: Any = None
        self.warm_timings: dict[str, float] = {}
        self.activation = threading.Event()  # a spare waits on it before creating its context

    # --- the pre-warm -------------------------------------------------------------------------
    def prepare(self) -> None:
        """Everything but the CUDA context: imports, detect(), the registry (a spare stops here)."""
        t0 = time.perf_counter()
        # Extra modules to import first (tests use it to register experiments of their own).
        for name in filter(None, os.environ.get("GPULAB_WORKER_PRELOAD", "").split(",")):
            importlib.import_module(name.strip())
        import numpy  # noqa: F401

        with contextlib.suppress(ImportError):
            import torch  # noqa: F401
        t1 = time.perf_counter()
        self.inventory = detect()  # imports CuPy too, where installed; creates no CUDA context
        t2 = time.perf_counter()
        # deferred: the worker's warm-up is where these imports are paid, off the learner's clock
        # unused names: importing them registers the hidden jobs (a check, a profile, a
        # preparation, the driver's figures of a learner's kernels, a quiz's measurement)
        from gpulab.exercises import job, prewarm, profile_job  # noqa: F401
        from gpulab.experiments import kernel_device, quiz_probes  # noqa: F401
        from gpulab.experiments.registry import all_experiments

        all_experiments()
        self._freeze()
        t3 = time.perf_counter()
        self.warm_timings = {
            "imports_s": t1 - t0,
            "detect_s": t2 - t1,
            "registry_s": t3 - t2,
        }

    def activate(self) -> None:
        """The CUDA context (the part that holds GPU memory), then the worker can say hello."""
        t0 = time.perf_counter()
        init_cuda(self.inventory, self.device_index)
        self._freeze()
        self.warm_timings["cuda_init_s"] = time.perf_counter() - t0
        self.warm_timings["total_s"] = sum(
            self.warm_timings[k] for k in ("imports_s", "detect_s", "registry_s", "cuda_init_s")
        )

    @staticmethod
    def _freeze() -> None:
        # Everything imported so far lives as long as the process: take it out of the cyclic
        # collector's view, so the gc.collect() after a failed job takes microseconds, not 0.2 s.
        gc.collect()
        gc.freeze()

    def standby_message(self) -> dict[str, Any]:
        """What a spare says once its imports are done: its pid and how long they took."""
        return {
            "msg": "standby",
            "protocol": PROTOCOL,
            "pid": os.getpid(),
            "warm": dict(self.warm_timings),
            "cuda_context": primary_context_active(self.device_index),
            # False: the first check would calibrate inside itself; the front end runs
            # `calibrate` at warm-up instead (with progress), so that check stays fast.
            "calibrated": peaks.ready(self.inventory, self.device_index),
        }

    def wait_for_activation(self) -> None:
        """Block until the client sends `activate`, timing the wait."""
        t0 = time.perf_counter()
        self.activation.wait()
        self.warm_timings["standby_wait_s"] = time.perf_counter() - t0

    def hello(self) -> dict[str, Any]:
        """The handshake: protocol, pid, inventory and warm-up timings."""
        return {
            "msg": "hello",
            "protocol": PROTOCOL,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "device_index": self.device_index,
            "inventory": self.inventory.to_dict(),
            "warm": self.warm_timings,
            "cuda_context": primary_context_active(self.device_index),
            # False: the first check would calibrate inside itself; the front end runs
            # `calibrate` at warm-up instead (with progress), so that check stays fast.
            "calibrated": peaks.ready(self.inventory, self.device_index),
        }

    # --- commands -------------------------------------------------------------------------------
    def read_commands(self, fd: int) -> None:
        """Reader thread. EOF means the client is gone: leave now, whatever is running."""
        try:
            while True:
                cmd = read_frame(fd)
                if cmd is None or cmd.get("cmd") == "shutdown":
                    break
                if cmd.get("cmd") == "cancel":
                    self.cancel_asked.add(str(cmd.get("job")))
                    if cmd.get("job") == self.current:
                        self.cancel_flag.set()
                elif cmd.get("cmd") == "run":
                    self.commands.put(cmd)
                elif cmd.get("cmd") == "activate":
                    self.activation.set()
        except Exception as exc:  # noqa: BLE001 - a corrupt stream: nothing sensible is left to do
            with contextlib.suppress(Exception):
                _real_stderr().write(f"gpulab worker: command stream broken: {exc}\n")
        with contextlib.suppress(Exception):
            _real_stdout().flush()
            _real_stderr().flush()
        os._exit(0)

    def serve(self) -> None:
        """Run queued jobs one at a time, forever; a runner bug fails the job, not the worker."""
        while True:
            cmd = self.commands.get()
            try:
                self.run_one(cmd)
            except BrokenPipeError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug of the runner itself: report it, keep serving
                self.current = ""
                self.send_event(
                    ev.make(
                        ev.FAILED,
                        str(cmd.get("job", "")),
                        kind=ev.KIND_EXCEPTION,
                        message=f"the worker failed to run the job: {type(exc).__name__}: {exc}",
                        traceback=traceback.format_exc(),
                    )
                )
            # Idle: the ranks the job took (a collective check's) stand by again for the next
            # check, started while the learner edits (a job that takes none stopped them
            # before it ran). A set that cannot start leaves the next check to start its own.
            with contextlib.suppress(Exception):
                ranks.replenish(start=self.commands.empty())

    # --- one job --------------------------------------------------------------------------------
    def send_event(self, event: dict[str, Any]) -> None:
        """Send one runner event to the client."""
        self.out.send({"msg": "event", "event": event})

    def memory_event(self, job: str, device_index: int) -> dict[str, Any]:
        """A `memory` event: the allocator's reading on `device_index` and the host RSS."""
        reading = memory.probe(device_index)
        rss = host_rss()
        if rss is not None:
            reading["host_rss"] = rss
        return ev.make(ev.MEMORY, job, reading=reading, pid=os.getpid())

    def run_one(self, cmd: dict[str, Any]) -> None:
        """Run one job with its stdout, stderr and memory readings turned into events; retire after
        if it left CUDA unusable."""
        job = str(cmd["job"])
        device = int(cmd.get("device", self.device_index))
        self.cancel_flag = threading.Event()
        self.current = job
        if job in self.cancel_asked:
            self.cancel_flag.set()
        finals: list[dict[str, Any]] = []
        stop = threading.Event()
        sampler = threading.Thread(
            target=self._sample, args=(job, device, stop), name="memory", daemon=True
        )

        def emit(event: dict[str, Any]) -> None:
            if event["type"] in ev.FINAL:
                finals.append(event)  # held back: cleanup and the last reading go first
                return
            self.send_event(event)
            if event["type"] == ev.ACCEPTED:
                # The pre-job level, read before the experiment allocates anything.
                self.send_event(self.memory_event(job, device))
                sampler.start()

        def log_line(line: str, stream: str) -> None:
            self.send_event(ev.make(ev.LOG, job, line=line, stream=stream))

        if not takes_ranks(cmd):
            # ranks standing by hold memory (a CUDA context a rank on NCCL) that this job's
            # figures would otherwise count against
            ranks.drop_standby()
        out, err = LineStream(log_line, "stdout"), LineStream(log_line, "stderr")
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            run_job(
                job,
                cmd["experiment"],
                cmd.get("params") or {},
                self.inventory,
                emit,
                device_index=device,
                is_cancelled=self.cancel_flag.is_set,
            )
        finally:
            sys.stdout, sys.stderr = saved
            out.flush()
            err.flush()
            stop.set()
            if sampler.is_alive():
                sampler.join()
        final = (
            finals[0]
            if finals
            else ev.make(
                ev.FAILED,
                job,
                kind=ev.KIND_EXCEPTION,
                message="the job ended without a result",
                traceback="",
            )
        )
        retire = ""
        if final["type"] == ev.RESULT:
            retire = str(((final.get("result") or {}).get("summary") or {}).get(RETIRE_WORKER, ""))
        elif final["type"] != ev.RESULT:
            retire = cuda_broken(self.inventory, device)
            if final.get("kind") == ev.KIND_ILLEGAL_ADDRESS and not retire:
                retire = "an illegal address leaves the CUDA context unusable"
            if not retire:
                release_memory()
        if sampler.ident is not None:  # the job ran: one reading at its end
            self.send_event(self.memory_event(job, device))
        self.current = ""
        self.cancel_asked.discard(job)
        if retire:
            # Before the final event: the client must not hand the next job to this worker.
            self.out.send({"msg": "retiring", "reason": retire})
        self.send_event(final)
        if retire:
            with contextlib.suppress(Exception):
                _real_stderr().flush()
            os._exit(EXIT_RETIRED)

    def _sample(self, job: str, device: int, stop: threading.Event) -> None:
        while not stop.wait(MEMORY_INTERVAL_S):
            with contextlib.suppress(Exception):
                self.send_event(self.memory_event(job, device))


def takes_ranks(cmd: dict[str, Any]) -> bool:
    """Whether the job in `cmd` may take ranks standing by (gpulab.core.ranks): its experiment
    says so by a `takes_ranks(params)` (the exercise check: a collective exercise's)."""
    try:
        asks = getattr(get(str(cmd.get("experiment", ""))), "takes_ranks", None)
        return bool(asks(cmd.get("params") or {})) if asks is not None else False
    except Exception:  # noqa: BLE001 - an unknown job takes none; run_job reports it
        return False


def _real_stdout() -> TextIO:
    # The process's own streams, not the per-job LineStreams that replace sys.stdout during a run;
    # None only in an interpreter started without them (pythonw), which never runs a worker.
    return sys.__stdout__ if sys.__stdout__ is not None else sys.stdout


def _real_stderr() -> TextIO:
    return sys.__stderr__ if sys.__stderr__ is not None else sys.stderr


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The worker's command line (pipe fds, device, parent pid, --standby)."""
    p = argparse.ArgumentParser(prog="python -m gpulab.runner.worker.serve")
    p.add_argument("--fds", required=True, help="CMD_READ_FD,EVENT_WRITE_FD")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--parent", type=int, default=0, help="the client's pid")
    p.add_argument(
        "--standby",
        action="store_true",
        help="import everything, then wait for an `activate` command before touching CUDA",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Start the worker: pipes, parent watch, imports, CUDA context (after activation when a
    spare), then serve."""
    # Ctrl-C in a terminal reaches the whole process group; the client decides what it means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    args = parse_args(argv)
    die_with_parent(args.parent)
    faulthandler.enable(file=_real_stderr())  # a segfault leaves a Python traceback in the log
    cmd_fd, event_fd = (int(x) for x in args.fds.split(","))
    for fd in (cmd_fd, event_fd):
        os.set_inheritable(fd, False)  # subprocesses of experiments must not hold our pipes
    # A child an experiment forks (os.fork, multiprocessing's fork) copies every fd, inheritable
    # or not: it must not hold the pipes, or the client would not see EOF when this worker dies.
    os.register_at_fork(after_in_child=lambda: close_fds(cmd_fd, event_fd))
    worker = Worker(FrameWriter(event_fd), args.device)
    threading.Thread(
        target=worker.read_commands, args=(cmd_fd,), name="commands", daemon=True
    ).start()
    try:
        if args.standby:
            # The client may stop (SIGSTOP) a spare during a job; only once this is said, since a
            # spare stopped before die_with_parent() could outlive the client.
            worker.out.send({"msg": "guarded", "pid": os.getpid()})
        worker.prepare()
        if args.standby:
            worker.out.send(worker.standby_message())
            worker.wait_for_activation()
        worker.activate()
        worker.out.send(worker.hello())
        worker.serve()
    except BrokenPipeError:  # the client is gone
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
