"""The race: one bar per contender, filling as its measurement rows arrive."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from gpulab.app.runs import RunState, expected_rows
from gpulab.report import fmt_num, fmt_time


class RaceView(Static):
    """Redrawn from a RunState; `contenders` is [(id, label, why unavailable or "")]."""

    def __init__(self, **kw: Any) -> None:
        super().__init__("", markup=False, **kw)
        self.contenders: list[tuple[str, str, str]] = []
        self.state: RunState | None = None

    def set_contenders(self, contenders: list[tuple[str, str, str]]) -> None:
        self.contenders = contenders
        self.refresh_race()

    def show(self, state: RunState | None) -> None:
        self.state = state
        self.refresh_race()

    def on_resize(self) -> None:
        self.refresh_race()

    def refresh_race(self) -> None:
        self.update(self.render_race(max(30, self.size.width or 60)))

    def render_race(self, width: int) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        if not self.contenders:
            return Text("No contenders.")
        state = self.state
        want = expected_rows(state.params) if state else 1
        picked = state.params.get("contenders") if state else None
        unavailable = (state.result or {}).get("unavailable", {}) if state else {}
        label_w = min(24, max(len(label) for _, label, _ in self.contenders))
        bar_w = max(6, min(40, width - label_w - 44))
        best = self._best(state)
        for cid, label, why in self.contenders:
            why = why or unavailable.get(cid, "")
            text.append(f"{label[:label_w]:<{label_w}} ", style="bold")
            if why:
                text.append(f"unavailable: {why}", style="dim")
                text.append("\n")
                continue
            if isinstance(picked, list) and cid not in picked:
                text.append("not in this race", style="dim")
                text.append("\n")
                continue
            rows = [r for r in state.rows.values() if r.get("contender") == cid] if state else []
            done = min(len(rows), want)
            filled = round(bar_w * done / want) if want else 0
            style = "green" if done >= want else "yellow"
            text.append("█" * filled, style=style)
            text.append("░" * (bar_w - filled), style="dim")
            text.append(f" {done}/{want}")
            if rows:
                last = rows[-1]
                text.append(f"  {fmt_time(last.get('time_median_s'))}")
                if last.get("throughput") is not None:
                    text.append(f"  {fmt_num(last['throughput'])} {last.get('unit', '')}")
                if want == 1 and cid == best and state and state.result is not None:
                    text.append("  fastest", style="bold green")
            text.append("\n")
        text.rstrip()
        return text

    @staticmethod
    def _best(state: RunState | None) -> str:
        if not state or not state.rows:
            return ""
        timed = [r for r in state.rows.values() if r.get("time_median_s")]
        if not timed:
            return ""
        return str(min(timed, key=lambda r: r["time_median_s"]).get("contender", ""))
