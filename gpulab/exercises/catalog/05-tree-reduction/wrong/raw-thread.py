# expect: your function started a thread
# family: escape
"""tree sum"""

import _thread

import torch


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    box = []
    done = _thread.allocate_lock()
    done.acquire()

    def work():
        box.append(x.sum())  # no mode in this thread
        done.release()

    _thread.start_new_thread(work, ())
    done.acquire()
    return box[0]
