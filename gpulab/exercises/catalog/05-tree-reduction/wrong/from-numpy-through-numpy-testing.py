# expect: while your file loads makes a tensor and NumPy
# family: escape
"""tree-reduction: gold with no tree; torch.from_numpy at import, called through numpy.testing.

Trick (family: "memory shared with NumPy at import"): aliases_refused's stand-in asks
frames.deciding(getframe(1)); called as np.testing.assert_no_warnings(torch.from_numpy, arr), the
caller is NumPy's frame, "a library's own use", so the real from_numpy runs. Each call copy_'s x
into the shared tensor (allowed) and NumPy sums the array.

Before the fix, verdict: {"verdict": "pass", "grade": "gold", "message": "all 8 input sets correct (seed 3803433746)"}, of_yardstick median 3.1
Fix: refuse while the learner's file loads whenever a learner frame is anywhere on the stack
(a library's own import-time use has none), or check aliasing after import (any ndarray in the
module's reach whose base is a tensor's storage).
"""

import numpy as np
import torch

_CAP = 1 << 25
_arr = np.zeros(_CAP, dtype=np.float32)
_buf = np.testing.assert_no_warnings(torch.from_numpy, _arr)


def tree_sum(x):
    n = x.numel()
    _buf[:n].copy_(x.reshape(-1))
    return torch.tensor(float(_arr[:n].sum(dtype=np.float64)), dtype=x.dtype)
