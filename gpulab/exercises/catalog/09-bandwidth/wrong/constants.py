# expect: do not write the figures down
# family: loose-property
"""Wrong: figures written down from an earlier run; nothing is copied or timed."""


def measure_h2d(nbytes: int) -> dict[str, float]:
    return {"pageable": 12.0, "pinned": 50.0}
