"""Check for ddp: the learner's training loop, run as 2 gloo ranks, against one process.

The check starts 2 ranks (gpulab.exercises.ranked: each has joined a gloo process group), and
each calls the learner's `train` on the same initial model and dataset. DDP averages gradients, so 2 ranks with half the global batch
each take exactly the steps of one process on the whole batch, provided each rank sees its
share of DistributedSampler's shuffle (re-drawn by set_epoch every epoch). The reference is that
single-process run, computed before the learner's code is loaded: every rank's final weights
must match it. Also checked: only rank 0 logged, and each rank destroyed its process group.
The dataset counts its reads (in shared memory, so DataLoader workers count too): each rank must
read exactly its share (EPOCHS * SAMPLES / WORLD samples) and the two ranks together every sample
once per epoch, and both ranks must end with the same weights: a rank that trains on the whole
dataset without DDP (one process's run, twice) or on its share without averaging gradients fails
by name.
Always gloo on the CPU, on a GPU machine too: the point is the structure, not the speed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "train"
# Not compiled ahead when opened (gpulab.exercises.prewarm): its check starts two processes of
# its own, so nothing it pays for on the first check would be left in the worker.
PREPARE = False
WORLD = 2
EPOCHS = 3
BATCH = 16  # global: 8 per rank
SAMPLES = 96  # a multiple of WORLD * BATCH: no padding, no short last batch
LR = 0.05
SIZES = (6, 16, 1)
RTOL = 1e-4  # fp32: only the order of the gradient sums differs


def cases(ctx: api.Context) -> list[api.Case]:
    rng = ctx.rng
    x = rng.standard_normal((SAMPLES, SIZES[0])).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    weights = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:], strict=True):
        weights.append((rng.uniform(-1, 1, (fan_out, fan_in)) / np.sqrt(fan_in)).astype("f4"))
        weights.append(rng.uniform(-0.1, 0.1, fan_out).astype(np.float32))
    name = f"MLP {'-'.join(map(str, SIZES))}, {SAMPLES} samples, {EPOCHS} epochs, 2 ranks"
    return [api.Case(name, {"x": x, "y": y, "weights": weights})]


def _model(weights: list[np.ndarray]) -> Any:
    import torch

    layers: list[Any] = []
    for i in range(0, len(weights), 2):
        lin = torch.nn.Linear(weights[i].shape[1], weights[i].shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(weights[i]))
            lin.bias.copy_(torch.from_numpy(weights[i + 1]))
        layers += [lin, torch.nn.Tanh()]
    return torch.nn.Sequential(*layers[:-1])


def _single(case: api.Case, reshuffle: bool) -> list[np.ndarray]:
    """One process, global batches in DistributedSampler's order (seed 0 + epoch; without
    reshuffle, epoch 0's order every epoch, as a loop that forgets set_epoch gets)."""
    import torch

    model = _model(case.args["weights"])
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = torch.from_numpy(case.args["x"]), torch.from_numpy(case.args["y"])
    per = BATCH // WORLD
    for epoch in range(EPOCHS):
        g = torch.Generator().manual_seed(epoch if reshuffle else 0)
        perm = torch.randperm(SAMPLES, generator=g)
        shares = [perm[r::WORLD] for r in range(WORLD)]  # DistributedSampler's split
        for s in range(SAMPLES // BATCH):
            idx = torch.cat([share[s * per : (s + 1) * per] for share in shares])
            # The mean over the union equals DDP's average of the ranks' equal-sized means.
            loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def _share_rows(case: api.Case, rank: int, reshuffle: bool = True) -> np.ndarray:
    """The inputs rank `rank` trains on, in order: its DistributedSampler share of each epoch's
    shuffle (seed 0 + epoch; without reshuffle, epoch 0's every epoch), batch after batch."""
    import torch

    x = case.args["x"]
    rows = []
    for epoch in range(EPOCHS):
        g = torch.Generator().manual_seed(epoch if reshuffle else 0)
        perm = torch.randperm(SAMPLES, generator=g)
        rows.append(x[perm[rank::WORLD].numpy()])
    return np.concatenate(rows)


def expected(case: api.Case, ctx: api.Context) -> dict[str, Any]:
    return {"weights": _single(case, True), "stale": _single(case, False)}


def rank(rc: Any, fn: Any, case: api.Case) -> dict[str, Any]:
    """One rank: the learner's train on the shared starting point (gpulab.exercises.ranked)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    from gpulab.exercises.counting import CountingDataset

    torch.set_num_threads(1)  # two ranks on a small CPU: threads would fight over the cores
    lines: list[str] = []
    model = _model(case.args["weights"])
    x, y = torch.from_numpy(case.args["x"].copy()), torch.from_numpy(case.args["y"].copy())
    data = CountingDataset(x, y)  # counts its reads, in DataLoader workers too
    # What the model trained on, read from the model itself: the rows its first layer saw in
    # every training forward (evaluation under no_grad aside), and whether DDP wrapped it
    trained: list[Any] = []
    wrapped: list[bool] = []
    through = [0]  # training forwards that went through the DDP wrapper of this model
    # DDP prepares its gradient all-reduce in a forward only while require_backward_grad_sync
    # is on (no_sync() turns it off): a forward with it off leaves averaging to the learner.
    # Read before and after the wrapper's forward, so a flag flipped in between counts as off.
    synced = [0]  # training forwards through the wrapper with DDP's all-reduce armed
    pending: list[bool] = []  # this forward's flag, read before it ran
    since_step = [False]  # a synced forward since the last optimizer step of this model
    steps = [0, 0]  # optimizer steps of this model's parameters: all, and with no synced forward

    def via_ddp(m: Any) -> None:
        grad = torch.is_grad_enabled()
        through[0] += grad
        pending.append(grad and bool(getattr(m, "require_backward_grad_sync", False)))

    hooked: list[str] = []  # a communication hook of the learner's, by name

    left_out: list[int] = []  # parameters of the model DDP's reducer does not average
    # what each wrapper's reducer was built over, read as DDP's __init__ returns, before the
    # learner's code runs again: a red team wrote ddp._module_parameters back to the whole
    # model after DDP was told to ignore all but one bias, and the check read it at each forward
    reduced: dict[int, set[int]] = {}
    frozen_at_wrap: set[int] = set()  # the reducer takes only what needs a gradient then

    def after_ddp(m: Any) -> None:
        # Read from the wrapper as it ran: the parameters its reducer averages (a parameter
        # ignored, or frozen while DDP was built, is averaged by nobody but the learner)
        synced_ids = reduced.get(id(m), set()) - frozen_at_wrap
        left_out.append(sum(id(p) not in synced_ids for p in model.parameters()))
        # A Python comm hook replaces DDP's all-reduce of each bucket: one that returns the
        # bucket unchanged leaves the averaging to the learner's own code
        for hook, _state in getattr(m, "_comm_hooks", ()) or ():
            hooked.append(getattr(hook, "__name__", "a hook"))
        if pending and pending.pop() and getattr(m, "require_backward_grad_sync", False):
            synced[0] += 1
            since_step[0] = True

    ours = {id(p) for p in model.parameters()}

    def stepping(opt: Any, _args: Any, _kwargs: Any) -> None:
        if any(id(p) in ours for g in opt.param_groups for p in g["params"]):
            steps[0] += 1
            steps[1] += not since_step[0]
            since_step[0] = False

    def saw(_m: Any, inputs: Any) -> None:
        if torch.is_grad_enabled():
            trained.append(inputs[0].detach().clone())

    model[0].register_forward_pre_hook(saw)
    real_init = DDP.__init__
    # A forward through DDP is read where DDP's own forward arms its reducer (_pre_forward, then
    # _post_forward, which tells the reducer to expect the backward), not from the wrapper's
    # module hooks: those ran for a red team's DDP subclass whose forward called the model
    # straight away (the reducer all-reduced nothing), and not for a correct ddp.forward(x)
    real_pre, real_post = DDP._pre_forward, DDP._post_forward
    built: set[int] = set()  # the DDPs built over this model

    def pre_forward(self: Any, *inputs: Any, **kwargs: Any) -> Any:
        if id(self) in built:
            via_ddp(self)
        return real_pre(self, *inputs, **kwargs)

    def post_forward(self: Any, output: Any) -> Any:
        out = real_post(self, output)
        if id(self) in built:
            after_ddp(self)
        return out

    groups: list[int] = []  # the ranks in the group of each DDP of this model

    def spy(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        wrapped.append(module is model)
        if module is model:
            frozen_at_wrap.update(id(p) for p in model.parameters() if not p.requires_grad)
        real_init(self, module, *args, **kwargs)
        if module is model:
            reduced[id(self)] = {id(p) for p in getattr(self, "_module_parameters", ())}
            built.add(id(self))
            group = getattr(self, "process_group", None)
            groups.append(int(group.size()) if group is not None else rc.world_size)

    # A hook set on the reducer itself (the C++ binding register_comm_hook ends in) is one too
    c10d_c = torch._C._distributed_c10d
    binds = [
        (owner, name, getattr(owner, name))
        for owner in dict.fromkeys((dist, c10d_c))
        for name in ("_register_comm_hook", "_register_builtin_comm_hook")
        if hasattr(owner, name)
    ]

    def binding(real: Any) -> Any:
        def register(reducer: Any, *args: Any) -> Any:
            hook = args[-1]
            hooked.append(getattr(hook, "__name__", None) or str(hook))
            return real(reducer, *args)

        return register

    DDP.__init__ = spy  # type: ignore[method-assign] - put back below
    DDP._pre_forward = pre_forward  # type: ignore[method-assign] - put back below
    DDP._post_forward = post_forward  # type: ignore[method-assign] - put back below
    for owner, name, real in binds:
        setattr(owner, name, binding(real))
    stepped = register_optimizer_step_pre_hook(stepping)
    try:
        fn(model, data, epochs=EPOCHS, batch_size=BATCH, lr=LR, log=lines.append)
    finally:
        DDP.__init__ = real_init  # type: ignore[method-assign] - the original
        DDP._pre_forward = real_pre  # type: ignore[method-assign] - the original
        DDP._post_forward = real_post  # type: ignore[method-assign] - the original
        for owner, name, real in binds:
            setattr(owner, name, real)
        stepped.remove()
    return {
        "trained_on": torch.cat(trained).numpy() if trained else np.zeros((0, SIZES[0]), "f4"),
        "ddp": any(wrapped),
        "forwards": len(trained),
        "through_ddp": through[0],
        "synced": synced[0],
        "steps": steps[0],
        "unsynced_steps": steps[1],
        "hooked": hooked[:1],
        "groups": groups,
        "left_out": max(left_out, default=0),
        "params": sum(1 for _ in model.parameters()),
        "world": rc.world_size,
        "weights": [p.detach().numpy().copy() for p in model.parameters()],
        "lines": lines,
        "destroyed": not dist.is_initialized(),
        "reads": data.reads.numpy().copy(),
        "inputs_kept": bool(
            np.array_equal(x.numpy(), case.args["x"]) and np.array_equal(y.numpy(), case.args["y"])
        ),
    }


def run(fn: Any, case: api.Case, ctx: api.Context) -> list[dict[str, Any]]:
    from gpulab.core import ranks
    from gpulab.exercises import ranked

    try:
        return ranked.launch(__file__, fn, ENTRY, case, WORLD)
    except ranks.RankFailed as exc:
        raise api.CheckError(str(exc)) from None


def _close(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(x - y) / (np.abs(y) + 1e-3))) for x, y in zip(a, b, strict=True))


def compare(
    want: dict[str, Any], got: list[dict[str, Any]], case: api.Case, ctx: api.Context
) -> api.Mismatch | None:
    for rank, out in enumerate(got):
        if not out["destroyed"]:
            return api.Mismatch(
                f"rank {rank} left its process group open: call dist.destroy_process_group()"
            )
    if got[1]["lines"]:
        return api.Mismatch(f"rank 1 logged {got[1]['lines'][0]!r}: log from rank 0 only")
    if len(got[0]["lines"]) != EPOCHS:
        return api.Mismatch(f"rank 0 logged {len(got[0]['lines'])} lines, expected one per epoch")
    share = EPOCHS * SAMPLES // WORLD
    for rank, out in enumerate(got):
        if not out["inputs_kept"]:
            return api.Mismatch(
                f"rank {rank} changed the dataset's samples: leave them as they are"
            )
        read = int(out["reads"].sum())
        if read != share:
            whole = " (each rank read the whole dataset)" if read == EPOCHS * SAMPLES else ""
            return api.Mismatch(
                f"rank {rank} read {read} samples in {EPOCHS} epochs, expected {share}{whole}: "
                "each rank must read only its DistributedSampler share, a 1/world_size part"
            )
    for rank, out in enumerate(got):
        if not out["ddp"]:
            return api.Mismatch(
                f"rank {rank} never wrapped the model in DistributedDataParallel: DDP's hooks "
                "average the gradients in every backward; gather or broadcast by hand is not "
                "the exercise"
            )
        if out["through_ddp"] < out["forwards"]:
            never = (
                " (it never ran a forward through the wrapper: DDP's own forward, where its "
                "reducer is told to expect the backward, never ran)"
                if not out["through_ddp"]
                else ""
            )
            return api.Mismatch(
                f"rank {rank} ran {out['forwards'] - out['through_ddp']} of its {out['forwards']} "
                f"training forwards past DistributedDataParallel{never}: call the wrapped model, "
                "and leave DDP's forward as it is, so that its hooks average the gradients in "
                "the backward"
            )
        if out.get("left_out"):
            return api.Mismatch(
                f"rank {rank}'s DistributedDataParallel averages {out['params'] - out['left_out']}"
                f" of the model's {out['params']} parameters: the others were ignored or frozen "
                "when it was built, so their gradients are averaged by hand, not by DDP's hooks; "
                "wrap the model with every parameter trainable"
            )
        small = [n for n in out.get("groups", ()) if n < out.get("world", WORLD)]
        if small:
            return api.Mismatch(
                f"rank {rank} built DistributedDataParallel over a group of {small[0]} of the "
                f"{out.get('world', WORLD)} ranks: its hooks average over that group only; "
                "leave process_group out (the default group holds every rank)"
            )
        if out.get("hooked"):
            return api.Mismatch(
                f"rank {rank}'s DDP has a communication hook of yours ({out['hooked'][0]}): it "
                "replaces DDP's own averaging of the gradients, which is what this exercise "
                "teaches; leave DDP's all-reduce as it is (register_comm_hook is ddp-overlap's)"
            )
        if out["forwards"] and not out["synced"]:
            return api.Mismatch(
                f"rank {rank} ran all {out['forwards']} of its training forwards inside "
                "ddp.no_sync(): DDP averaged none of its gradients (averaging them by hand is "
                "not the exercise); run the forward and backward outside no_sync()"
            )
        if out["unsynced_steps"]:
            return api.Mismatch(
                f"rank {rank} took {out['unsynced_steps']} of its {out['steps']} optimizer "
                "steps with every forward since the step before inside ddp.no_sync(): DDP "
                "averaged none of those gradients; no_sync() is for the micro-batches before "
                "the last of an accumulation, whose backward then averages them all"
            )
        want_rows = _share_rows(case, rank)
        seen = out["trained_on"]
        if seen.shape != want_rows.shape or not np.array_equal(seen, want_rows):
            if np.array_equal(seen, _share_rows(case, rank, reshuffle=False)):
                return api.Mismatch(
                    f"rank {rank} trained on the same shuffle every epoch: call "
                    "sampler.set_epoch(epoch) at the start of each epoch"
                )
            return api.Mismatch(
                f"rank {rank}'s model trained on {len(seen)} samples, not its "
                f"DistributedSampler share of {len(want_rows)} in the sampler's order: each "
                "rank trains on its share only (all the samples, or another rank's, is not DDP)"
            )
    both = sum(out["reads"] for out in got)
    if not (both == EPOCHS).all():
        i = int(np.argmax(both != EPOCHS))
        return api.Mismatch(
            f"sample {i} was read {int(both[i])} times by the {WORLD} ranks in {EPOCHS} epochs, "
            f"expected {EPOCHS}: the ranks' shares overlap (a DistributedSampler per rank, with "
            "the rank and world size of the process group, splits every epoch without overlap)"
        )
    apart = _close(got[1]["weights"], got[0]["weights"])
    if apart > RTOL:
        return api.Mismatch(
            f"rank 0 and rank 1 ended with different weights (relative difference {apart:.2g}): "
            "their gradients were not averaged; wrap the model in DistributedDataParallel so "
            "every backward all-reduces them",
            max_error=apart,
        )
    for rank, out in enumerate(got):
        err = _close(out["weights"], want["weights"])
        if err <= RTOL:
            continue
        if _close(out["weights"], want["stale"]) <= RTOL:
            return api.Mismatch(
                f"rank {rank}'s weights match training with the same shuffle every epoch: "
                "call sampler.set_epoch(epoch) at the start of each epoch"
            )
        return api.Mismatch(
            f"rank {rank}'s trained weights differ from the single-process reference "
            f"(relative error {err:.2g}): each rank must train on its DistributedSampler "
            "share with a per-rank batch of batch_size // world_size, inside DDP",
            max_error=err,
        )
    return None
