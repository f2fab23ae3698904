"""Text plots (gpulab.render.plot): shape, log axes, legend, unplottable points."""

from gpulab.core.results import Series
from gpulab.render.plot import plot


def test_plot_fits_its_width_and_marks_every_point():
    xs = [1e3, 1e4, 1e5, 1e6]
    text = plot([Series("err", xs, [1 / x for x in xs], "samples", "error", True, True)], 50, 8)
    lines = text.splitlines()
    assert all(len(line) <= 50 for line in lines)
    assert sum(line.count("•") for line in lines) == 4 + 1  # four points and the legend
    assert "x: samples (log)" in text and "y: error (log)" in text
    # on log axes 1/x is a straight falling line: the top-left and bottom-right are marked
    grid = [line.split("│", 1)[1] for line in lines if "│" in line]
    assert grid[0].lstrip().startswith("•") and grid[-1].rstrip().endswith("•")


def test_plot_counts_points_a_log_axis_cannot_show():
    text = plot(
        [
            {
                "name": "s",
                "x": [0, 1, 10],
                "y": [1, 2, 3],
                "log_x": True,
                "log_y": False,
                "x_label": "",
                "y_label": "",
            }
        ],
        40,
        5,
    )
    assert "(1 point not plottable)" in text


def test_two_series_get_two_markers_and_empty_input_says_so():
    text = plot([Series("a", [1, 2], [1, 2]), Series("b", [1, 2], [2, 1])], 40, 5)
    assert "• a" in text and "x b" in text
    assert plot([]) == "(nothing to plot)"
