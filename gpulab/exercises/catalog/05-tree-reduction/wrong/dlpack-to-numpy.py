# expect: through DLPack
# family: escape
"""Cheat: hands the tensor to NumPy through DLPack (torch.utils.dlpack.to_dlpack is not seen by
the TorchFunctionMode; Tensor.__dlpack__ and .numpy() are refused) and lets NumPy sum it."""

import numpy as np
from torch.utils.dlpack import to_dlpack


class _Capsule:
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None, **kw):
        return to_dlpack(self.t)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def tree_sum(x):
    host = x if x.device.type == "cpu" else x.to("cpu")
    return float(np.from_dlpack(_Capsule(host.contiguous())).sum(dtype=np.float64))
