"""Host memory as this process may use it: the RAM free, lowered to its memory cgroup's limits.

A container's (or a systemd slice's) memory limit belongs to the process's own cgroup, named in
/proc/self/cgroup, not to the root of /sys/fs/cgroup (which, inside a cgroup namespace, can be
the host's). Every cgroup from the process's own up to the mount's root can set a limit; the
tightest one is what the kernel enforces, so each level is read. cgroup v2 and v1 both:

    v2  memory.max ("max": none), memory.current, memory.stat inactive_file, memory.events
    v1  memory.limit_in_bytes (>= 2**60: none), memory.usage_in_bytes, memory.stat
        total_inactive_file, memory.oom_control

Every function takes `root` (default "/"), under which /proc and /sys are looked up, so tests
run against a fake tree. No torch, no third-party imports: the UI process uses this too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

V1_NO_LIMIT = 2**60  # v1 writes "no limit" as a page-rounded LONG_MAX
ROOT = Path("/")
NEAR_LIMIT = 0.9  # a peak this close to the limit makes a SIGKILL probably an OOM kill


@dataclass(frozen=True)
class Level:
    """One cgroup's memory figures (bytes); limit None where this level sets none."""

    path: Path
    version: int
    limit: int | None
    usage: int | None
    reclaimable: int
    peak: int | None

    @property
    def available(self) -> int | None:
        """Bytes this level still allows (limit minus usage, counting reclaimable page cache as
        free), or None."""
        if self.limit is None or self.usage is None:
            return None
        return max(0, self.limit - max(0, self.usage - self.reclaimable))


def _under(root: Path, path: str | PurePosixPath) -> Path:
    return root / str(path).lstrip("/")


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return int(text)
    except ValueError:
        return None  # "max" and the like


def _stat(path: Path, key: str) -> int | None:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def _own_cgroups(root: Path) -> tuple[str | None, str | None]:
    """(v2 path, v1 memory path) from /proc/self/cgroup."""
    v2 = v1 = None
    try:
        lines = _under(root, "/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            v1 = path
    return v2, v1


def _mounts(root: Path) -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fs type, super options) of each cgroup mount."""
    out: list[tuple[str, str, str, set[str]]] = []
    try:
        lines = _under(root, "/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields, extra = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(extra) < 3:
            continue
        if extra[0] in ("cgroup", "cgroup2"):
            out.append((fields[3], fields[4], extra[0], set(extra[2].split(","))))
    return out


def _chain(root: Path, own: str, mount_root: str, mount_point: str) -> list[Path]:
    """The process's cgroup directory and each parent up to the mount point, innermost first."""
    own_p, mroot = PurePosixPath(own), PurePosixPath(mount_root)
    try:
        rel = own_p.relative_to(mroot)
    except ValueError:
        rel = PurePosixPath(*own_p.parts[1:])  # another namespace's view: take it as it is
    top = _under(root, mount_point)
    here = top / str(rel) if str(rel) != "." else top
    if not here.is_dir():
        here = top
    chain = [here]
    while here != top and top in here.parents:
        here = here.parent
        chain.append(here)
    return chain


def cgroup_levels(root: Path = ROOT) -> list[Level]:
    """This process's memory cgroup and its ancestors (innermost first); [] when none is seen."""
    v2, v1 = _own_cgroups(root)
    mounts = _mounts(root)
    if v1 is not None:  # a v1 memory controller, where mounted, is the one that limits memory
        mount = next((m for m in mounts if m[2] == "cgroup" and "memory" in m[3]), None)
        where = (mount[0], mount[1]) if mount else ("/", "/sys/fs/cgroup/memory")
        if _under(root, where[1]).is_dir():
            return [_v1(p) for p in _chain(root, v1, *where)]
    if v2 is not None:
        mount = next((m for m in mounts if m[2] == "cgroup2"), None)
        where = (mount[0], mount[1]) if mount else ("/", "/sys/fs/cgroup")
        if _under(root, where[1]).is_dir():
            return [_v2(p) for p in _chain(root, v2, *where)]
    return []


def _v2(path: Path) -> Level:
    return Level(
        path=path,
        version=2,
        limit=_read_int(path / "memory.max"),
        usage=_read_int(path / "memory.current"),
        reclaimable=_stat(path / "memory.stat", "inactive_file") or 0,
        peak=_read_int(path / "memory.peak"),
    )


def _v1(path: Path) -> Level:
    limit = _read_int(path / "memory.limit_in_bytes")
    return Level(
        path=path,
        version=1,
        limit=None if limit is None or limit >= V1_NO_LIMIT else limit,
        usage=_read_int(path / "memory.usage_in_bytes"),
        reclaimable=_stat(path / "memory.stat", "total_inactive_file") or 0,
        peak=_read_int(path / "memory.max_usage_in_bytes"),
    )


def _tightest(levels: list[Level]) -> Level | None:
    limited = [lv for lv in levels if lv.available is not None]
    return min(limited, key=lambda lv: lv.available or 0) if limited else None


def cgroup_available(root: Path = ROOT) -> int | None:
    """What the tightest memory cgroup limit still allows, or None without a limit."""
    level = _tightest(cgroup_levels(root))
    return None if level is None else level.available


def meminfo_available(root: Path = ROOT) -> int | None:
    """/proc/meminfo's MemAvailable (free plus reclaimable cache), in bytes."""
    try:
        with _under(root, "/proc/meminfo").open() as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def host_available_bytes(root: Path = ROOT) -> int | None:
    """Host RAM a new allocation can take now without swapping or the OOM killer, or None.

    Linux: MemAvailable lowered to the tightest cgroup limit's headroom; elsewhere the free
    physical pages (os.sysconf).
    """
    avail = meminfo_available(root)
    if avail is None:
        try:
            avail = int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None
    cgroup = cgroup_available(root)
    return avail if cgroup is None else min(avail, cgroup)


def oom_kills(root: Path = ROOT) -> int | None:
    """A count that grows with every OOM kill this process could suffer: the kernel's
    (/proc/vmstat oom_kill) plus its own cgroup's; None where neither can be read."""
    counts = [_stat(_under(root, "/proc/vmstat"), "oom_kill")]
    levels = cgroup_levels(root)
    if levels:
        inner = levels[0]
        name = "memory.events" if inner.version == 2 else "memory.oom_control"
        counts.append(_stat(inner.path / name, "oom_kill"))
    seen = [c for c in counts if c is not None]
    return sum(seen) if seen else None


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def oom_hint(before: int | None, root: Path = ROOT) -> str | None:
    """Why a SIGKILL was probably an out-of-memory kill, one clause, or None.

    `before`: `oom_kills()` when the job started. Evidence: that count grew, or the memory
    cgroup's peak came within NEAR_LIMIT of its limit.
    """
    after = oom_kills(root)
    level = _tightest(cgroup_levels(root))
    limit = f"; the memory limit here is {_gib(level.limit)}" if level and level.limit else ""
    if before is not None and after is not None and after > before:
        return f"the kernel's out-of-memory killer ran{limit}"
    if (
        level is not None
        and level.limit
        and level.peak is not None
        and level.peak >= NEAR_LIMIT * level.limit
    ):
        return (
            f"memory use reached {_gib(level.peak)} of the {_gib(level.limit)} limit"
            f" of cgroup {level.path.name or '/'}"
        )
    return None
