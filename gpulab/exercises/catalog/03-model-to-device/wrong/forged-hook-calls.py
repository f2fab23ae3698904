# expect: the model ran a forward pass on cpu
# family: writes-what-check-reads
"""Shortcut (property forged): the forward runs on the CPU, where the model and batches already
are, and with an autograd graph (no no_grad); the outputs are detached and moved to the device
afterwards (wrong/runs-on-cpu-moves-after.py). The check learns where each Linear layer ran from
forward hooks it registered on the model it handed over; before running, this code takes those
hooks out of model._forward_hooks, then calls each one by hand with an input made on the asked
device and an output with no grad_fn, so the check reads 'ran on device, no graph'."""

import torch


def predict(model, batches, device):
    device = torch.device(device)
    model.eval()
    stolen = []
    for m in model.modules():
        if m._forward_hooks:
            stolen.append((m, list(m._forward_hooks.values())))
            m._forward_hooks.clear()
    outs = []
    for batch in batches:
        y = model(batch)  # on the CPU, graph and all
        outs.append(y.detach().to(device))
    for m, hooks in stolen:
        fake_in = torch.empty((1, m.in_features), device=device)
        fake_out = torch.empty((1, m.out_features), device=device)
        for _ in batches:
            for h in hooks:
                h(m, (fake_in,), fake_out)
    model.to(device)
    return outs
