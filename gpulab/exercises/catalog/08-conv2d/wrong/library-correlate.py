# expect: no kernel of yours ran: cupyx.scipy.ndimage.correlate
# family: library
"""Wrong: the library's filter in the wrapper. The image is right, but CuPy's kernel did the work:
this exercise is about writing it."""

from cupyx.scipy import ndimage


def conv2d(image, kernel, out):
    ndimage.correlate(image, kernel, output=out, mode="constant", cval=0.0)
