# expect: read tensor values into Python or NumPy
# family: escape
"""Shortcut (the forward done by NumPy, products on the device only to be seen): the weights
and each batch are read into NumPy (.numpy(), no operator for the dispatcher to see), the
forward runs there in float64, and the outputs are moved to the device; each Linear's weight
then goes through a product on the device with an empty input of the batch's size, so the
check reads "every layer ran on the device over every row". Before the fix: pass (on a GPU
too: NumPy's work is no ATen operator). The check now refuses reads of tensor data into
Python or NumPy inside predict (a lone integer, a DataLoader's seed, is no data)."""

import numpy as np
import torch
import torch.nn.functional as F


def predict(model, batches, device):
    device = torch.device(device)
    model.eval()
    lin1, bn, lin2 = model[0], model[1], model[4]
    w = {
        k: v.detach().numpy().astype(np.float64)
        for k, v in (
            ("w1", lin1.weight),
            ("b1", lin1.bias),
            ("g", bn.weight),
            ("be", bn.bias),
            ("m", bn.running_mean),
            ("v", bn.running_var),
            ("w2", lin2.weight),
            ("b2", lin2.bias),
        )
    }
    model.to(device)
    outs = []
    with torch.no_grad():
        for b in batches:
            x = b.numpy().astype(np.float64)
            h = x @ w["w1"].T + w["b1"]
            h = (h - w["m"]) / np.sqrt(w["v"] + bn.eps) * w["g"] + w["be"]
            y = np.tanh(h) @ w["w2"].T + w["b2"]
            # products the check counts, on the device, over every row: their results unused
            F.linear(torch.empty(len(x), 16, device=device), model[0].weight)
            F.linear(torch.empty(len(x), 64, device=device), model[4].weight)
            outs.append(torch.from_numpy(y.astype(np.float32)).to(device))
    return outs
