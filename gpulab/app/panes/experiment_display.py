"""How the experiment panel shows one run: progress, the result tabs, the error box, the headline.

`RunDisplay` is an object the `ExperimentPanel` (`experiments.py`) holds as `drawing`; the panel
owns the layout, the form and the run's life (submit, follow, cancel). The display only draws
into the panel's widgets: `show_run` picks the run on screen and `flush` applies everything that
arrived since the last redraw, at most `FLUSH_S` apart while a run streams events. Separate so that what a run looks like can be
read (and changed) without the machinery that runs it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Button, DataTable, Log, ProgressBar, Static

from gpulab.app.runs import RunState, row_key
from gpulab.app.widgets.images import ImageView
from gpulab.app.widgets.plots import ResultPlots
from gpulab.app.widgets.race import RaceView
from gpulab.core import events as ev
from gpulab.render.results import fmt_num, fmt_pct, fmt_time, row_notes

COLUMNS = ("contender", "size", "dtype", "time", "throughput", "% of peak", "verdict")


class RunDisplay:
    """Draws the run on screen into `panel`'s widgets; it holds what it has drawn so far."""

    def __init__(self, panel: Widget) -> None:
        self.panel = panel
        self.query_one = panel.query_one
        self.experiment_id = ""  # the panel's chosen experiment (the race shows its runs only)
        self.shown: Any = None  # the RunState on screen
        self.dirty = False  # something arrived since the last flush
        self._drawn_rows = -1
        self._drawn_log = 0

    def show_run(self, state: RunState | None) -> None:
        """Put `state` (None: nothing) on screen, drawn from scratch."""
        self.shown = state
        self._drawn_rows = -1
        self._drawn_log = 0
        self.query_one("#job-log", Log).clear()
        self.dirty = True
        self.flush()

    def flush(self) -> None:
        """Apply everything that arrived since the last flush in one redraw."""
        if not self.dirty:
            return
        self.dirty = False
        state = self.shown
        bar = self.query_one("#progress", ProgressBar)
        step = self.query_one("#step", Static)
        self.query_one(RaceView).show(
            state if state and state.experiment == self.experiment_id else None
        )
        if state is None:  # nothing shown: no tab keeps another run's figures
            bar.update(progress=0)
            step.update("")
            self.query_one("#results", DataTable).clear()
            self._drawn_rows = -1
            self.query_one("#explanation", Static).update("Run an experiment to see what it shows.")
            self.query_one("#open-lesson").display = False
            self.query_one("#plot", ResultPlots).show([])
            self.query_one("#images", ImageView).show([])
            self.show_headline("")
            self.show_prediction(None)
            return
        bar.update(progress=round(state.fraction * 100, 1))
        step.update(self._step_text(state))
        self._draw_table(state)
        self._draw_log(state)
        self._draw_outcome(state)

    def _step_text(self, state: RunState) -> str:
        if state.status == ev.RESULT:
            took = state.ended - state.started
            return f"done in {took:.1f} s" if state.ended and took >= 0 else "done"
        if state.status == ev.FAILED:
            return "failed"
        if state.status == ev.CANCELLED:
            return "cancelled"
        return state.message or state.status

    def _draw_table(self, state: RunState) -> None:
        version = len(state.rows) + (1000000 if state.result is not None else 0)
        if version == self._drawn_rows:
            return
        self._drawn_rows = version
        table = self.query_one("#results", DataTable)
        table.clear()
        for row in state.rows.values():
            table.add_row(*self._cells(state, row), key=row_key(row))

    @staticmethod
    def _cells(state: RunState, row: dict[str, Any]) -> list[Any]:
        thr = row.get("throughput")
        verdict = state.verdict(row)
        style = {"pass": "green", "FAIL": "bold red"}.get(verdict, "dim")
        return [
            row.get("contender", ""),
            row.get("size", ""),
            row.get("dtype", ""),
            fmt_time(row.get("time_median_s")),
            "-" if thr is None else f"{fmt_num(thr)} {row.get('unit', '')}",
            fmt_pct(row),  # the CLI's spelling: n/a where no ceiling exists, - where unmeasured
            Text(verdict, style=style),
        ]

    def _draw_log(self, state: RunState) -> None:
        log = self.query_one("#job-log", Log)
        if self._drawn_log > len(state.log):
            log.clear()
            self._drawn_log = 0
        new = state.log[self._drawn_log :]
        if new:
            log.write_lines(new)
            self._drawn_log = len(state.log)

    def _draw_outcome(self, state: RunState) -> None:
        box = self.query_one("#run-error-box")
        final = state.final or {}
        if state.status == ev.FAILED:
            self.show_error(
                str(final.get("kind", "error")),
                str(final.get("message", "")),
                bool(final.get("traceback")),
            )
        else:
            box.display = False
        result = state.result
        explanation = self.query_one("#explanation", Static)
        lesson_button = self.query_one("#open-lesson", Button)
        plot_view = self.query_one("#plot", ResultPlots)
        images = self.query_one("#images", ImageView)
        self.show_headline((result or {}).get("headline") or "")
        self.show_prediction(state)
        if not result:
            explanation.update("The explanation appears when the run finishes.")
            lesson_button.display = False
            plot_view.show([])
            images.show([])
            return
        lesson = result.get("lesson", "")
        text = "What you just saw"
        text += f" (lesson: {lesson})" if lesson else ""
        text += ":\n" + (result.get("explanation") or "(no explanation given)")
        unavailable = result.get("unavailable") or {}
        if unavailable:
            text += "\n\nDid not run here:\n" + "\n".join(
                f"  {k}: {v}" for k, v in unavailable.items()
            )
        notes = row_notes(result)  # capped counts, noisy timings, a % over 100 and why
        if notes:
            text += "\n\nNotes on rows:\n" + "\n".join(notes)
        explanation.update(text)
        lesson_button.display = bool(lesson)
        plot_view.show(result.get("series") or [])
        images.show(result.get("artifacts") or [])
        self.query_one("#unavailable", Static).update(
            ("Unavailable here:\n  " + "\n  ".join(f"{k}: {v}" for k, v in unavailable.items()))
            if unavailable
            else ""
        )

    def show_error(self, kind: str, message: str, has_traceback: bool = False) -> None:
        """Show a failed run's kind and message, and the traceback button when there is one."""
        box = self.query_one("#run-error-box")
        box.display = True
        self.query_one("#run-error", Static).update(f"✗ {kind}: {message}")
        self.query_one("#show-traceback", Button).display = has_traceback
        if self.shown is None or self.shown.status != ev.FAILED:
            self.panel.app.notify(message, title=kind, severity="error", timeout=8)

    def show_headline(self, text: str) -> None:
        """Show the run's one-line answer (hidden when empty)."""
        line = self.query_one("#headline", Static)
        line.update(f"➜ {text}" if text else "")
        line.display = bool(text)

    def show_prediction(self, state: RunState | None) -> None:
        """The learner's prediction beside the measurement and the calibration, once the run
        has ended; what was predicted while it runs; hidden when none was made."""
        line = self.query_one("#exp-prediction", Static)
        prediction = state.prediction if state is not None else None
        if prediction is None:
            line.update("")
        elif state is not None and not state.finished:
            line.update(_capital(prediction.said()) + "; measuring…")
        else:
            text = _capital(prediction.words())
            line.update(text + (f"\n{state.calibration}" if state and state.calibration else ""))
        line.display = prediction is not None


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
