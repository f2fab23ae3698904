"""One NVML session: load the binding, initialise, and turn every failed call into an `NA`.

The module object is injectable (`NvmlSession(nvml=fake)`), so tests drive the same code with
`gpulab.testing.fake_nvml`. Errors are classified by their NVML return code (`exc.value`), which
the real `pynvml` errors and the fake's share, never by class identity.

Calls the driver answered "not supported", "no permission" or "function not found" are
remembered per GPU and not asked again (the driver will not change its mind while we run), and a
GPU that fell off the bus stays lost for the session: every later field reads N/A (GPU lost).
"""

from __future__ import annotations

import contextlib
import threading
from importlib import metadata
from typing import Any

from gpulab.telemetry.values import NA

# NVML return codes (nvml.h); the same numbers in pynvml and in the fake.
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18
NO_DATA = 21
GPU_NOT_FOUND = 28

INSTALL_HINT = "install the NVIDIA driver (it ships libnvidia-ml.so) and `pip install nvidia-ml-py`"

_REASONS = {
    NOT_SUPPORTED: "not supported on this GPU/driver",
    NO_PERMISSION: "no permission to read it",
    NOT_FOUND: "not found",
    DRIVER_NOT_LOADED: "the NVIDIA driver is not loaded",
    LIBRARY_NOT_FOUND: "no NVIDIA driver (libnvidia-ml.so not found)",
    FUNCTION_NOT_FOUND: "this driver is too old for the query",
    GPU_IS_LOST: "GPU lost: it fell off the bus; it needs a reset or a reboot",
    LIB_RM_VERSION_MISMATCH: "driver and NVML library versions differ: reboot after the upgrade",
    NO_DATA: "no data yet",
    GPU_NOT_FOUND: "GPU not found",
}
_STICKY = {NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND}


def error_code(exc: BaseException) -> int | None:
    """The NVML error code of `exc`, or None."""
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def reason_for(exc: BaseException, *, mig: bool = False) -> str:
    """Why an NVML call failed, in words a person can act on."""
    code = error_code(exc)
    if code == NOT_SUPPORTED and mig:
        return "not available per GPU while MIG is on (the GPU is split into instances)"
    if code in _REASONS:
        return _REASONS[code]
    return f"NVML error: {exc}"


def text(value: Any) -> str:
    """NVML strings arrive as bytes from older bindings and str from newer ones."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def binding_version() -> str:
    """The installed nvidia-ml-py version, or empty."""
    try:
        return metadata.version("nvidia-ml-py")
    except metadata.PackageNotFoundError:
        return ""


class NvmlSession:
    """NVML for one process. Not used from two threads at once: the sampler owns it."""

    def __init__(self, nvml: Any = None) -> None:
        self._given = nvml
        self.nvml: Any = None
        self.error: NA | None = None  # set when NVML cannot be used at all
        self._handles: dict[int, Any] = {}
        self._known: dict[tuple[int, str, tuple[Any, ...]], NA] = {}
        self._lost: dict[int, NA] = {}
        self.mig: dict[int, bool] = {}
        self._lock = threading.Lock()
        self._open = False

    # lifecycle ---------------------------------------------------------------------------
    def open(self) -> bool:
        """Initialise NVML once; False (and `error` says why, with what to install) if we can't."""
        with self._lock:
            if self._open or self.error is not None:
                return self._open
            nvml = self._given
            if nvml is None:
                try:
                    import pynvml
                except ImportError:
                    self.error = NA(f"the NVML binding is missing: {INSTALL_HINT}")
                    return False
                nvml = pynvml
            try:
                nvml.nvmlInit()
            except Exception as exc:  # noqa: BLE001 - every NVML failure becomes an NA with its reason
                self.error = NA(reason_for(exc))
                return False
            self.nvml = nvml
            self._open = True
            return True

    def close(self) -> None:
        """Shut NVML down, once."""
        with self._lock:
            if self._open:
                with contextlib.suppress(Exception):
                    self.nvml.nvmlShutdown()
            self._open = False
            self._handles.clear()

    @property
    def ok(self) -> bool:
        """True while NVML is open."""
        return self._open

    # queries -----------------------------------------------------------------------------
    def system(self, name: str, *args: Any) -> Any:
        """A call with no device: a value or an NA."""
        if not self._open:
            return self.error or NA("NVML is not initialised")
        fn = getattr(self.nvml, name, None)
        if fn is None:
            return NA(f"this nvidia-ml-py has no {name}: upgrade it")
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - every NVML failure becomes an NA with its reason
            return NA(reason_for(exc))

    def count(self) -> int | NA:
        """How many GPUs NVML sees, or NA."""
        return self.system("nvmlDeviceGetCount")

    def handle(self, index: int) -> Any:
        """GPU `index`'s NVML handle, or NA with why."""
        if index in self._handles:
            return self._handles[index]
        h = self.system("nvmlDeviceGetHandleByIndex", index)
        if not isinstance(h, NA):
            self._handles[index] = h
        elif "lost" in h.reason:
            self._lost[index] = h
        return h

    def lost(self, index: int) -> NA | None:
        """Why GPU `index` was lost (it fell off the bus, ...), or None."""
        return self._lost.get(index)

    def _key(self, arg: Any) -> Any:
        """An argument as a cache key: a GPU's handle (a ctypes pointer, unhashable) by its
        index."""
        for i, h in self._handles.items():
            if arg is h:
                return ("gpu", i)
        return arg

    def call(self, index: int, name: str, *args: Any) -> Any:
        """`nvml.<name>(handle, *args)` for GPU `index`: a value or an NA with the reason."""
        if not self._open:
            return self.error or NA("NVML is not initialised")
        if index in self._lost:
            return self._lost[index]
        key = (index, name, tuple(self._key(a) for a in args))
        if key in self._known:
            return self._known[key]
        fn = getattr(self.nvml, name, None)
        if fn is None:
            return NA(f"this nvidia-ml-py has no {name}: upgrade it")
        h = self.handle(index)
        if isinstance(h, NA):
            return h
        try:
            return fn(h, *args)
        except Exception as exc:  # noqa: BLE001 - every NVML failure becomes an NA with its reason
            code = error_code(exc)
            na = NA(reason_for(exc, mig=self.mig.get(index, False)))
            if code == GPU_IS_LOST:
                self._lost[index] = na
            elif code in _STICKY:
                self._known[key] = na
            return na
