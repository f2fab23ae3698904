"""Check for ddp-overlap: a DDP communication hook that starts each bucket's all-reduce and
returns at once, so the all-reduce overlaps the rest of the backward pass.

Correctness: each case trains an MLP under DistributedDataParallel with the learner's hook
registered, on 3 ranks (NCCL where every rank has a GPU, gloo on the CPU elsewhere:
gpulab.exercises.collective_checks), with buckets small enough that every backward pass hands
the hook several. Every rank's weights must match one process trained on the whole batch
(computed before the learner's file was loaded): a hook that sums without dividing matches the
run with world times the learning rate instead, and is told so. Inside the hook nothing may wait
for the communication (gpulab.exercises.collective_guard's HOOK rules), and every collective it
starts must be handed back as a future.

Speed, where this machine has 2 or more GPUs: one more case trains a wider MLP on every GPU up to
4 and times, in interleaved rounds on every rank, a step with the learner's hook, with our
solution's, with a hook that waits for its all-reduce, and with no communication at all (DDP's
no_sync). Exposed communication = a step's time - the step without communication. The
learner's hook must hide at least half of what ours hides (gpulab.exercises.saving); the
verdict gives each one's exposed communication a step.
"""

from __future__ import annotations

import copy
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from gpulab.exercises import api, saving
from gpulab.exercises import collective_checks as cc

ENTRY = "allreduce_hook"
PREPARE = False  # its check starts processes of its own
# One case: each rank of a DDP check imports torch._dynamo as DDP is built (seconds on a busy
# CPU), and 3 ranks tell a mean from a sum as well as 4
WORLDS = (3,)
SIZES = (6, 32, 32, 1)
STEPS = 4
PER_RANK = 4  # samples a rank, a step
LR = 0.05
CAP_MB = 0.0005  # tiny buckets: the hook sees several each backward pass
RTOL = 1e-4  # float32: only the order of the gradient sums differs
# The timed case: wide enough that the all-reduce costs as much as the compute on NVLink
TIMED = {"width": 4096, "layers": 8, "batch": 256, "steps": 5, "warmup": 3}
REFERENCE = Path(__file__).with_name("solution.py")
# Each call of the learner's hook runs in a profiler range of this name (the correctness cases
# run under torch's profiler): a dispatcher op inside it is read from what ran, whatever door
# the hook reached it by
HOOK_RANGE = "gpulab::comm_hook"
# Dispatcher ops that block until a collective's result has arrived
WAIT_OPS = ("_c10d_functional::wait_tensor",)


def _gpus_for_timing(ctx: api.Context) -> int:
    n = cc.gpus(ctx)
    return min(cc.MAX_TIMED_WORLD, n) if n >= 2 else 0


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for world in WORLDS:
        be = cc.backend(ctx, world)
        seed = int(ctx.rng.integers(2**31))
        name = f"{world} ranks ({cc.where(be)}), MLP {'-'.join(map(str, SIZES))}, {STEPS} steps"
        out.append(api.Case(name, {"seed": seed, "world": world, "backend": be}))
    timed = _gpus_for_timing(ctx)
    if timed:
        out.append(timed_case(timed, "nccl", rounds=2 if ctx.quick else 6, **TIMED))
    return out


def timed_case(world: int, backend: str, *, rounds: int, **shape: int) -> api.Case:
    """The timed case: `shape` is the MLP (width, layers), the batch a rank, and the steps a
    round and before the rounds (TIMED on GPUs; a test makes a small one for gloo)."""
    name = (
        f"timed: {world} ranks ({cc.where(backend)}), MLP {shape['layers']} x "
        f"{shape['width']}, exposed communication a step"
    )
    args = {"world": world, "backend": backend, "timed": True, "rounds": rounds, **shape}
    return api.Case(name, args)


def _data(case: api.Case) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """(weights, x, y): the starting MLP and every step's global batch, from the case's seed."""
    rng = np.random.default_rng(case.args["seed"])
    weights = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:], strict=True):
        weights.append((rng.uniform(-1, 1, (fan_out, fan_in)) / np.sqrt(fan_in)).astype("f4"))
        weights.append(rng.uniform(-0.1, 0.1, fan_out).astype(np.float32))
    n = STEPS * case.args["world"] * PER_RANK
    x = rng.standard_normal((n, SIZES[0]), dtype=np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    return weights, x, y


def _mlp(weights: list[np.ndarray]) -> Any:
    import torch

    layers: list[Any] = []
    for i in range(0, len(weights), 2):
        lin = torch.nn.Linear(weights[i].shape[1], weights[i].shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(weights[i]))
            lin.bias.copy_(torch.from_numpy(weights[i + 1]))
        layers += [lin, torch.nn.Tanh()]
    return torch.nn.Sequential(*layers[:-1])


def _single(case: api.Case, lr: float) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    """One process on every step's whole global batch (the mean over it is the average of the
    ranks' equal-sized means, which is what DDP's averaged gradients give): the trained weights,
    and every step's gradients as the backward pass left them."""
    import torch

    weights, x, y = _data(case)
    model = _mlp(weights)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    batch = case.args["world"] * PER_RANK
    grads = []
    for s in range(STEPS):
        xb = torch.from_numpy(x[s * batch : (s + 1) * batch])
        yb = torch.from_numpy(y[s * batch : (s + 1) * batch])
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()], grads


def expected(case: api.Case, ctx: api.Context) -> dict[str, Any]:
    if case.args.get("timed"):
        return {}
    world = case.args["world"]
    mean, grads = _single(case, LR)
    return {"mean": mean, "grads": grads, "sum": _single(case, LR * world)[0]}


def before_load(rc: Any) -> None:
    cc.before_load(rc)


def _ddp(model: Any, rc: Any, cap_mb: float) -> Any:
    from torch.nn.parallel import DistributedDataParallel as DDP

    if rc.device.startswith("cuda"):
        return DDP(model.to(rc.device), device_ids=[rc.device], bucket_cap_mb=cap_mb)
    return DDP(model, bucket_cap_mb=cap_mb)


class _Hooked:
    """The learner's hook (or ours) as DDP calls it (`call`), under the HOOK rules: the first
    thing any call did wrong is kept, nothing is raised inside the backward pass."""

    def __init__(self, hook: Any) -> None:
        from torch.profiler import record_function

        from gpulab.exercises import collective_guard

        self.path = cc.learner_file(hook)
        self.problem: str | None = None
        self.calls = 0
        # What each future the hook returned delivered to DDP, a parameter at a time (by its
        # id): read as DDP reads it, so averaging done anywhere else does not count
        self.delivered: dict[int, Any] = {}

        def keep(params: list[Any]) -> Any:
            def kept(fut: Any) -> Any:
                value = fut.value()
                flat = value[0] if isinstance(value, list | tuple) else value
                at = 0
                for p in params:
                    n = p.numel()
                    self.delivered[id(p)] = flat[at : at + n].detach().reshape(p.shape).clone()
                    at += n
                return value

            return kept

        # A plain function without annotations: DDP checks a hook's annotations by identity
        def call(state, bucket):
            self.calls += 1
            with collective_guard.recording(self.path) as found, record_function(HOOK_RANGE):
                out = hook(state, bucket)
            if found and self.problem is None:
                self.problem = found[0]
            if hasattr(out, "then"):
                out = out.then(keep(list(bucket.parameters())))
            return out

        self.call = call


def _train(rc: Any, hook: Any, case: api.Case) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from gpulab.exercises import collective_guard

    weights, x, y = _data(case)
    ddp = _ddp(_mlp(weights), rc, CAP_MB)
    hooked = _Hooked(hook)
    ddp.register_comm_hook(None, hooked.call)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    grads: list[Any] = []  # as each backward pass left them: what DDP made of the hook's futures
    sent: list[Any] = []  # what the hook's futures delivered, each step
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            _steps(rc, ddp, opt, hooked, x, y, grads, sent)
        cc.sync(rc.device)
    except Exception as exc:  # noqa: BLE001 - the hook's rule, or its exception, in one line
        if hooked.problem:
            raise collective_guard.Refused(hooked.problem) from None
        raise collective_guard.LearnerFailed(
            f"training with your hook raised {collective_guard.learner_line(exc, hooked.path)}"
        ) from None
    if hooked.problem is None:
        hooked.problem = _waited_in_hook(prof.events())
    if hooked.problem:
        raise collective_guard.Refused(hooked.problem)
    return {
        "weights": [p.detach().cpu().numpy().copy() for p in ddp.module.parameters()],
        "grads": grads,
        "sent": sent,
        "calls": hooked.calls,
    }


def _waited_in_hook(events: Any) -> str | None:
    """The first wait op that ran inside a call of the hook, read from the profile: a red team
    waited on its functional all-reduce through wait_tensor fetched from a fresh
    torch._ops._OpNamespace, or from torch._C._jit_get_operation, past the guarded names."""
    for e in events:
        if e.name not in WAIT_OPS:
            continue
        parent = e.cpu_parent
        while parent is not None and parent.name != HOOK_RANGE:
            parent = parent.cpu_parent
        if parent is not None:
            return (
                f"your hook waits for a functional collective's result ({e.name}, reached "
                "past torch.ops' names): the backward pass stops there until it ends, so no "
                "computation overlaps it. Start the all-reduce with async_op=True and return "
                "its future (work.get_future(), with .then() for what comes after): DDP waits "
                "for it once the backward pass is done"
            )
    return None


def _steps(
    rc: Any, ddp: Any, opt: Any, hooked: _Hooked, x: Any, y: Any, grads: list, sent: list
) -> None:
    """The training steps, each rank on its share of every step's batch."""
    import torch

    batch = rc.world_size * PER_RANK
    for s in range(STEPS):
        lo = s * batch + rc.rank * PER_RANK  # this rank's share of the step's batch
        xb = torch.from_numpy(x[lo : lo + PER_RANK]).to(rc.device)
        yb = torch.from_numpy(y[lo : lo + PER_RANK]).to(rc.device)
        loss = torch.nn.functional.mse_loss(ddp(xb), yb)
        opt.zero_grad()
        hooked.delivered.clear()
        loss.backward()
        params = list(ddp.module.parameters())
        grads.append([p.grad.detach().cpu().numpy().copy() for p in params])
        missing = torch.full((1,), float("nan"))  # a parameter no future delivered
        sent.append([hooked.delivered.get(id(p), missing).cpu().numpy().copy() for p in params])
        opt.step()


def rank(rc: Any, fn: Any, case: api.Case) -> Any:
    if case.args.get("timed"):
        return _timed(rc, fn, case)
    return _train(rc, fn, case)


def run(fn: Any, case: api.Case, ctx: api.Context) -> Any:
    a = case.args
    return cc.launch(__file__, fn, ENTRY, case, a["world"], a["backend"])


def _close(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(x - y) / (np.abs(y) + 1e-3))) for x, y in zip(a, b, strict=True))


def compare(want: Any, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    if case.args.get("timed"):
        return judge(got[0], ctx)
    world = case.args["world"]
    for r, out in enumerate(got):
        if out["calls"] < STEPS:
            return api.Mismatch(
                f"rank {r}: your hook was called {out['calls']} times in {STEPS} steps"
            )
        apart = _close(out["weights"], got[0]["weights"])
        if apart > RTOL:
            return api.Mismatch(
                f"rank {r} ended with other weights than rank 0 (relative difference "
                f"{apart:.2g}): the hook's result is not the same on every rank; all-reduce "
                "the bucket's gradients",
                max_error=apart,
            )
    err = _close(got[0]["weights"], want["mean"])
    if err <= RTOL:
        # Right weights from wrong gradients: the averaging was done elsewhere (the parameters
        # all-reduced after each step, say), not by the futures the hook handed DDP
        for r, out in enumerate(got):
            steps = zip(out["sent"], out["grads"], want["grads"], strict=True)
            for s, (sent, mine, whole) in enumerate(steps):
                apart = max(_close(sent, whole), _close(mine, whole))
                if apart > RTOL or apart != apart:
                    return api.Mismatch(
                        f"rank {r}: what your hook's futures delivered in step {s + 1} is not "
                        f"the mean over the ranks of their gradients (relative difference "
                        f"{apart:.2g}), yet the weights are right: they were averaged "
                        "somewhere else than in your hook; DDP's gradients are what the hook's "
                        "futures return",
                        max_error=apart,
                    )
        if not _gpus_for_timing(ctx) and case.args["world"] == WORLDS[-1]:
            ctx.notes.append(
                "exposed communication is timed where 2 or more GPUs run NCCL; here only "
                "correctness was checked"
            )
        return None
    if _close(got[0]["weights"], want["sum"]) <= RTOL:
        return api.Mismatch(
            f"the weights match training on the sum of the {world} ranks' gradients, not "
            "their mean: divide the bucket by the world size (DDP averages)"
        )
    return api.Mismatch(
        f"rank 0's trained weights differ from one process trained on the whole batch "
        f"(relative error {err:.2g}): the hook must return the mean over the ranks of the "
        "bucket's gradients",
        max_error=err,
    )


# ----------------------------------------------------------------------------- timing


def _blocking(state, bucket):  # no annotations: DDP checks a hook's by identity
    """The baseline: a hook that waits for its all-reduce before it returns."""
    import torch
    import torch.distributed as dist

    t = bucket.buffer()
    dist.all_reduce(t)
    t.div_(dist.get_world_size())
    fut: Any = torch.futures.Future()
    fut.set_result(t)
    return fut


def _timed(rc: Any, fn: Any, case: api.Case) -> dict[str, Any]:
    """Rounds of steps, each variant in turn (rotating), timed on every rank; the slowest
    rank's time a step. Rank 0 returns them."""
    import time

    import torch
    import torch.distributed as dist

    from gpulab.exercises.sandbox import fresh_name, load_text

    a = case.args
    ours = load_text(REFERENCE.read_text(), REFERENCE, fresh_name("reference", "overlap"))
    torch.manual_seed(0)
    layers: list[Any] = []
    for _ in range(a["layers"]):
        layers += [torch.nn.Linear(a["width"], a["width"]), torch.nn.Tanh()]
    base = torch.nn.Sequential(*layers).to(rc.device)
    variants: dict[str, Any] = {}
    for name, hook in (("yours", fn), ("ours", ours.allreduce_hook), ("waits", _blocking)):
        ddp = _ddp(copy.deepcopy(base), rc, 25.0)  # DDP's default bucket size
        ddp.register_comm_hook(None, _Hooked(hook).call if name != "waits" else hook)
        variants[name] = ddp
    x = torch.randn(a["batch"], a["width"], device=rc.device)

    def steps(name: str, n: int) -> float:
        ddp = variants["ours" if name == "alone" else name]
        dist.barrier()
        cc.sync(rc.device)
        t0 = time.perf_counter()
        for _ in range(n):
            if name == "alone":
                with ddp.no_sync():  # the same step without any communication
                    ddp(x).square().mean().backward()
            else:
                ddp(x).square().mean().backward()
        cc.sync(rc.device)
        took = torch.tensor([(time.perf_counter() - t0) / n], device=rc.device)
        dist.all_reduce(took, op=dist.ReduceOp.MAX)  # the step ends when the slowest rank's does
        return float(took)

    names = ["yours", "ours", "waits", "alone"]
    for name in names:
        steps(name, a["warmup"])
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(a["rounds"]):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(steps(name, a["steps"]))
        rc.progress((r + 1) / a["rounds"], "timing the hooks")
    return {"times": times, "world": rc.world_size}


def judge(out: dict[str, Any], ctx: api.Context) -> api.Mismatch | None:
    t = out["times"]
    rounds = list(zip(t["waits"], t["yours"], t["ours"], strict=True))
    alone = statistics.median(t["alone"])
    s = saving.Saving.of(rounds)
    ms = {k: 1e3 * max(0.0, v - alone) for k, v in (("yours", s.yours_s), ("ours", s.ours_s))}
    ms["waits"] = 1e3 * max(0.0, s.baseline_s - alone)
    figures = (
        f"exposed communication a step on {out['world']} GPUs: yours {ms['yours']:.2f} ms, "
        f"ours {ms['ours']:.2f} ms, a hook that waits {ms['waits']:.2f} ms (a step without "
        f"communication: {1e3 * alone:.2f} ms; DDP efficiency with ours "
        f"{alone / s.ours_s:.2f}, with yours {alone / s.yours_s:.2f})"
    )
    bad, note = saving.judge(s, what="step", baseline="with a hook that waits")
    if bad is not None:
        bad.message += f"; {figures}"
        return bad
    ctx.notes.append(f"{note}; {figures}" if note else figures)
    return None
