# why: namedtuple, Enum, a dataclass, TypeVar, NamedTuple, lru_cache, logging and warnings inside the call: modules that take a frame for their own use, never refused
"""tree-reduction, CORRECT: a pairwise tree, with namedtuple, enum, logging, dataclasses,
functools.lru_cache, warnings and typing used inside the function (must not be refused)."""

import collections
import dataclasses
import enum
import functools
import logging
import typing
import warnings

import torch

_log = logging.getLogger("tree")


def tree_sum(x):
    Level = collections.namedtuple("Level", "size odd")

    class Kind(enum.Enum):
        EVEN = 0
        ODD = 1

    @dataclasses.dataclass
    class Stats:
        levels: int = 0

    typing.TypeVar("T")
    Pair = typing.NamedTuple("Pair", [("a", int), ("b", int)])  # noqa: UP014 - inside the call

    @functools.cache
    def halves(m: int) -> Pair:
        return Pair(m // 2, m - m // 2)

    stats = Stats()
    x = x.reshape(-1)
    logging.getLogger("tree").debug("start %d", x.numel())
    _log.info("n=%d", x.numel())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.warn("levels start", stacklevel=2)
        while x.numel() > 1:
            m = x.numel()
            lv = Level(m, Kind(m % 2))
            half, rest = halves(m)
            y = x[:half] + x[m - half :]
            if lv.odd is Kind.ODD:
                y = torch.cat((y, x[half : half + 1]))
            x = y
            stats.levels += 1
    return x.reshape(())
