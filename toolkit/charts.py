"""Time ranges and server-drawn SVG line charts of utilisation (no JavaScript).

A page reads ``?range=`` with :func:`time_range`, asks its data for that range (each
:class:`TimeRange` names the resolution to read it at: raw samples for the last hour, 5-minute
rollups up to a day, hourly ones beyond) and draws it with :func:`line_chart`: a line per
series on a time axis, a gap wherever a bucket has no value, gridlines at 0/50/100 %, and a
hover title per bucket. Pure: no database.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

__all__ = [
    "DEFAULT_RANGE",
    "RANGES",
    "Series",
    "TimeRange",
    "line_chart",
    "time_range",
]


@dataclass(frozen=True)
class TimeRange:
    key: str  # the ``?range=`` value
    label: str
    span: datetime.timedelta
    # "raw" (samples), "5m" or "1h" (rollups): what a chart of this range reads.
    resolution: str
    step: datetime.timedelta  # the spacing of its points

    def start(self, now: datetime.datetime | None = None) -> datetime.datetime:
        return (now or timezone.now()) - self.span


RANGES = {
    r.key: r
    for r in (
        TimeRange("1h", "1 h", datetime.timedelta(hours=1), "raw", datetime.timedelta(seconds=15)),
        TimeRange("6h", "6 h", datetime.timedelta(hours=6), "5m", datetime.timedelta(minutes=5)),
        TimeRange("24h", "24 h", datetime.timedelta(hours=24), "5m", datetime.timedelta(minutes=5)),
        TimeRange("7d", "7 d", datetime.timedelta(days=7), "1h", datetime.timedelta(hours=1)),
        TimeRange("30d", "30 d", datetime.timedelta(days=30), "1h", datetime.timedelta(hours=1)),
    )
}
DEFAULT_RANGE = RANGES["24h"]


def time_range(value: str | None, default: TimeRange = DEFAULT_RANGE) -> TimeRange:
    """The range ``?range=`` names; the default for a missing or unknown value."""
    return RANGES.get(value or "", default)


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[datetime.datetime, float | None]]  # oldest first
    # A CSS colour class of the palette in static/css/portal.css (chart-1 … chart-4).
    colour: str = "chart-1"


_WIDTH, _HEIGHT = 600, 160
_LEFT, _RIGHT, _TOP, _BOTTOM = 34, 8, 8, 22


def _ticks(start: datetime.datetime, end: datetime.datetime) -> list[datetime.datetime]:
    """At most six round local times between ``start`` and ``end`` for the x axis."""
    span = (end - start).total_seconds()
    steps = (900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400)
    seconds = next((s for s in steps if span / s <= 6), steps[-1])
    offset = timezone.localtime(start).utcoffset() or datetime.timedelta()
    local_start = start.timestamp() + offset.total_seconds()
    moment = (local_start // seconds + 1) * seconds - offset.total_seconds()
    ticks = []
    while moment < end.timestamp():
        ticks.append(datetime.datetime.fromtimestamp(moment, tz=datetime.UTC))
        moment += seconds
    return ticks


def _gap(
    points: Sequence[tuple[datetime.datetime, float | None]], step: datetime.timedelta
) -> float:
    """Seconds between two points beyond which they are not joined: 2.5 times their usual
    spacing (a range's data may be coarser than its nominal step), at least twice ``step``."""
    moments = sorted(moment.timestamp() for moment, _ in points)
    spacings = sorted(b - a for a, b in zip(moments, moments[1:], strict=False) if b > a)
    usual = spacings[len(spacings) // 2] if spacings else 0.0
    return max(2 * step.total_seconds(), 2.5 * usual)


def _tick_label(moment: datetime.datetime, span: datetime.timedelta) -> str:
    local = timezone.localtime(moment)
    if span > datetime.timedelta(days=2):
        return local.strftime("%d %b")
    return local.strftime("%H:%M")


def line_chart(
    series: Sequence[Series],
    start: datetime.datetime,
    end: datetime.datetime,
    *,
    step: datetime.timedelta,
    title: str,
    unit: str = "%",
    maximum: float = 100.0,
) -> SafeString:
    """An SVG chart of ``series`` between ``start`` and ``end`` (values from 0 to
    ``maximum``). Two points much further apart than usual (:func:`_gap`) are not joined: the
    gap shows that nothing was read. Empty string when no series has a value."""
    if not any(v is not None for s in series for _, v in s.points):
        return mark_safe("")  # noqa: S308 - an empty string
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
    t0, span = start.timestamp(), max((end - start).total_seconds(), 1.0)

    def x(moment: datetime.datetime) -> float:
        return _LEFT + (moment.timestamp() - t0) / span * plot_w

    def y(value: float) -> float:
        return _TOP + plot_h - min(max(value, 0.0), maximum) / maximum * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" preserveAspectRatio="xMinYMid meet">',
        f"<title>{escape(title)}</title>",
    ]
    for fraction in (0.0, 0.5, 1.0):
        gy = y(maximum * fraction)
        parts.append(
            f'<line class="chart-grid" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{gy:.1f}" '
            f'y2="{gy:.1f}"/><text class="chart-axis" x="{_LEFT - 4}" y="{gy + 3:.1f}" '
            f'text-anchor="end">{maximum * fraction:.0f}{escape(unit)}</text>'
        )
    total = end - start
    for tick in _ticks(start, end):
        tx = x(tick)
        parts.append(
            f'<line class="chart-tick" x1="{tx:.1f}" x2="{tx:.1f}" y1="{_TOP + plot_h}" '
            f'y2="{_TOP + plot_h + 3}"/><text class="chart-axis" x="{tx:.1f}" '
            f'y="{_HEIGHT - 6}" text-anchor="middle">{_tick_label(tick, total)}</text>'
        )
    for one in series:
        gap = _gap(one.points, step)
        runs: list[list[tuple[float, float]]] = [[]]
        previous: datetime.datetime | None = None
        hovers = []
        for moment, value in one.points:
            if moment < start or moment > end:
                continue
            if value is None:
                if runs[-1]:
                    runs.append([])
                continue
            if previous is not None and (moment - previous).total_seconds() > gap and runs[-1]:
                runs.append([])
            previous = moment
            point = (x(moment), y(value))
            runs[-1].append(point)
            when = timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")
            hovers.append(
                f'<circle class="chart-point" cx="{point[0]:.1f}" cy="{point[1]:.1f}" r="3">'
                f"<title>{escape(one.label)} {when}: {value:.0f}{escape(unit)}</title></circle>"
            )
        parts.append(f'<g class="{escape(one.colour)}">')
        for run in runs:
            if len(run) == 1:
                parts.append(f'<circle cx="{run[0][0]:.1f}" cy="{run[0][1]:.1f}" r="1.8"/>')
            elif run:
                path = " ".join(f"{px:.1f},{py:.1f}" for px, py in run)
                parts.append(f'<polyline class="chart-line" points="{path}"/>')
        parts.extend(hovers)
        parts.append("</g>")
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text above is escaped
