"""Checks of a file a person names (an image to blur), made before any work starts.

Each check returns None when the file is fine, else the problem in words, phrased to follow the
path in a message: "'/tmp/x.png' does not exist". They stat and open the file but read no more
than its header, so the TUI's form can run them as the learner types.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# The most pixels an image may have before the checks refuse to decode it (PIL warns past
# 89 M and refuses past twice that); a 7680 x 4320 image is 33 M.
MAX_IMAGE_PIXELS = 16384 * 16384
MIN_IMAGE_SIDE = 8

_STAT_PROBLEMS = {
    errno.ENOENT: "does not exist",
    errno.ENOTDIR: "does not exist (a part of its path is a file, not a folder)",
    errno.ENAMETOOLONG: "is a name too long for this system",
    errno.EACCES: "cannot be read (permission denied)",
    errno.EPERM: "cannot be read (permission denied)",
    errno.ELOOP: "is a loop of symbolic links",
}


def path_problem(text: str) -> str | None:
    """Whether `text` names a regular file this process can read."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # "~someone" with no such user
        return "starts with a user name that does not exist"
    try:
        info = path.stat()
    except OSError as exc:
        return _STAT_PROBLEMS.get(exc.errno or 0, f"cannot be opened ({exc.strerror or exc})")
    except ValueError as exc:
        return f"is not a usable path ({exc})"
    if stat.S_ISDIR(info.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a device, pipe or socket)"
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def image_problem(text: str) -> str | None:
    """Whether `text` names an image file that PIL can decode: the file checks, then its header
    (format and size). The pixels are decoded later, by the run."""
    problem = path_problem(text)
    if problem:
        return problem
    from PIL import Image

    try:
        with Image.open(Path(text).expanduser()) as im:
            width, height = im.size
            if width * height <= MAX_IMAGE_PIXELS:
                im.verify()  # chunk checksums (PNG): a cut-off file is caught here, not mid-run
    except Image.DecompressionBombError:
        return "is too large to decode safely"
    except Image.UnidentifiedImageError:
        return "is not an image file that can be read (PNG or JPEG expected)"
    except (OSError, ValueError, SyntaxError) as exc:
        return f"could not be read ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if width < MIN_IMAGE_SIDE or height < MIN_IMAGE_SIDE:
        return f"is {width}x{height}: too small ({MIN_IMAGE_SIDE} pixels a side at least)"
    if width * height > MAX_IMAGE_PIXELS:
        return f"is {width}x{height}: too large (at most {MAX_IMAGE_PIXELS:,} pixels)"
    return None
