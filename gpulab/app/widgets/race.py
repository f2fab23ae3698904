"""The race: one bar per contender, filling as its measurement rows arrive; once the run has
finished, each contender's speed against the fastest (on a log scale where the spread is large),
which is the one picture a race needs."""

from __future__ import annotations

import math
from typing import Any

from rich.text import Text
from textual.widgets import Static

from gpulab.app.runs import RunState, expected_rows
from gpulab.core import events as ev
from gpulab.render.results import fmt_num, fmt_time


class RaceView(Static):
    """Redrawn from a RunState; `contenders` is [(id, label, why unavailable or "")]."""

    def __init__(self, **kw: Any) -> None:
        super().__init__("", markup=False, **kw)
        self.contenders: list[tuple[str, str, str]] = []
        self.state: RunState | None = None

    def set_contenders(self, contenders: list[tuple[str, str, str]]) -> None:
        """Set the contenders as (id, label, why unavailable or "")."""
        self.contenders = contenders
        self.refresh_race()

    def show(self, state: RunState | None) -> None:
        """Show `state`'s progress per contender (None: before a run)."""
        self.state = state
        self.refresh_race()

    def on_resize(self) -> None:
        """Redraw the bars for the new width."""
        self.refresh_race()

    def refresh_race(self) -> None:
        """Redraw the race at the current width."""
        self.update(self.render_race(max(30, self.size.width or 60)))

    def render_race(self, width: int) -> Text:
        """A bar per contender (rows done of those expected, best time so far), or the final
        standings."""
        text = Text(no_wrap=True, overflow="ellipsis")
        if not self.contenders:
            return Text("No contenders.")
        state = self.state
        want = expected_rows(state.params) if state else 1
        picked = state.params.get("contenders") if state else None
        unavailable = (state.result or {}).get("unavailable", {}) if state else {}
        longest = max(len(label) for _, label, _ in self.contenders)
        # the whole label where the width allows, leaving the bar and the figures 46 columns
        label_w = max(12, min(longest, width - 46))
        bar_w = max(6, min(40, width - label_w - 38))
        best = self._best(state)
        standings = self._standings(state) if state and state.status == ev.RESULT else None
        if standings is not None:
            return self._render_standings(text, standings, label_w, bar_w, picked, unavailable)
        any_extrapolated = any_not_run = False
        for cid, label, why in self.contenders:
            why = why or unavailable.get(cid, "")
            text.append(f"{abbreviate(label, label_w):<{label_w}} ", style="bold")
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
            guessed = sum(1 for r in rows if r.get("extrapolated"))
            filled = round(bar_w * done / want) if want else 0
            style = "green" if done >= want else "yellow"
            text.append("█" * (filled - round(bar_w * guessed / want)), style=style)
            text.append("▒" * round(bar_w * guessed / want), style="yellow dim")
            text.append("░" * (bar_w - filled), style="dim")
            text.append(f" {done}/{want}")
            if guessed:
                any_extrapolated = True
                text.append(f" ({guessed} extrapolated)", style="yellow")
            if done < want and state is not None and state.status == ev.RESULT:
                any_not_run = True
                text.append(f" ({want - done} not run)", style="dim")
            if rows:
                last = rows[-1]
                mark = "~" if last.get("extrapolated") else ""
                text.append(f"  {mark}{fmt_time(last.get('time_median_s'))}")
                if last.get("throughput") is not None:
                    text.append(f"  {fmt_num(last['throughput'])} {last.get('unit', '')}")
                if want == 1 and cid == best and state and state.result is not None:
                    text.append("  fastest", style="bold green")
            text.append("\n")
        if state is not None:
            text.append(self._key(want, any_extrapolated, any_not_run), style="dim")
        text.rstrip()
        return text

    @staticmethod
    def _standings(state: RunState) -> tuple[str, dict[str, dict[str, Any]]] | None:
        """(what was compared, {contender: its row}) for the finished race: the size and dtype
        that most contenders ran (the largest such size), where two or more have a time."""
        groups: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        for r in state.rows.values():
            t = r.get("time_median_s")
            if not t or t <= 0:
                continue
            key = (str(r.get("size", "")), str(r.get("dtype") or ""))
            groups.setdefault(key, {})[str(r.get("contender", ""))] = r
        if not groups:
            return None

        def rank(item: tuple[tuple[str, str], dict[str, Any]]) -> tuple[int, float]:
            (size, _), rows = item
            try:
                n = float(size.split()[0])
            except (ValueError, IndexError):
                n = 0.0
            return len(rows), n

        (size, dtype), rows = max(groups.items(), key=rank)
        if len(rows) < 2:
            return None
        what = " ".join(p for p in (f"n={size}" if size else "", dtype) if p)
        return what, rows

    def _render_standings(
        self,
        text: Text,
        standings: tuple[str, dict[str, dict[str, Any]]],
        label_w: int,
        bar_w: int,
        picked: Any,
        unavailable: dict[str, str],
    ) -> Text:
        what, rows = standings
        times = {cid: float(r["time_median_s"]) for cid, r in rows.items()}
        fastest, slowest = min(times.values()), max(times.values())
        spread = slowest / fastest
        log = spread > 20  # a linear bar would leave the slow ones an invisible sliver

        def length(t: float) -> int:
            if log:
                return max(1, round(bar_w * (1 - math.log(t / fastest) / math.log(spread * 1.5))))
            return max(1, round(bar_w * fastest / t))

        for cid, label, why in self.contenders:
            why = why or unavailable.get(cid, "")
            text.append(f"{abbreviate(label, label_w):<{label_w}} ", style="bold")
            if why:
                text.append(f"unavailable: {why}", style="dim")
            elif isinstance(picked, list) and cid not in picked:
                text.append("not in this race", style="dim")
            elif cid not in times:
                text.append(f"no time at {what}", style="dim")
            else:
                t, row = times[cid], rows[cid]
                n = length(t)
                text.append("█" * n, style="bold green" if t == fastest else "cyan")
                text.append(" " * (bar_w - n))
                mark = "~" if row.get("extrapolated") else ""
                text.append(f" {mark}{fmt_time(t)}")
                # the comparison before the throughput: on a narrow pane the end is cut
                if t == fastest:
                    text.append("  fastest", style="bold green")
                else:
                    text.append(f"  {fmt_num(t / fastest)}x slower", style="yellow")
                if row.get("throughput") is not None:
                    text.append(f"  {fmt_num(row['throughput'])} {row.get('unit', '')}")
            text.append("\n")
        scale = f"log scale: a {fmt_num(spread)}x spread" if log else "linear scale"
        text.append(f"bars: speed against the fastest at {what} ({scale})", style="dim")
        if any(r.get("extrapolated") for r in rows.values()):
            text.append("\n~: extrapolated from smaller sizes (too slow to run), not measured")
        text.rstrip()
        return text

    @staticmethod
    def _key(want: int, extrapolated: bool, not_run: bool = False) -> str:
        """What the counts mean, under the bars."""
        if want > 1:
            line = f"n/{want}: rows done of the {want} asked (sizes x dtypes); figures: latest row"
        else:
            line = "1/1: the contender's one measurement is in"
        if not_run:
            line += "\nnot run: sizes or dtypes that contender does not do (or skips as too slow)"
        if extrapolated:
            line += "\n▒ and ~: extrapolated from smaller sizes (too slow to run), not measured"
        return line

    @staticmethod
    def _best(state: RunState | None) -> str:
        if not state or not state.rows:
            return ""
        timed = [r for r in state.rows.values() if r.get("time_median_s")]
        if not timed:
            return ""
        return str(min(timed, key=lambda r: r["time_median_s"]).get("contender", ""))


def abbreviate(label: str, width: int) -> str:
    """`label` in `width` columns: whole if it fits, else cut at a word with an ellipsis."""
    if len(label) <= width:
        return label
    cut = label[: width - 1]
    if " " in cut[width // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" (,") + "…"
