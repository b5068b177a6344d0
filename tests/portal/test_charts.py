"""The server-drawn utilisation charts: ranges, gaps, axes, escaping."""

from __future__ import annotations

import datetime
import re

from toolkit.charts import DEFAULT_RANGE, RANGES, Series, line_chart, time_range

NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)
FIVE = datetime.timedelta(minutes=5)


def points(values, start=NOW - datetime.timedelta(hours=1), step=FIVE):
    return [(start + i * step, v) for i, v in enumerate(values)]


def test_a_range_names_its_resolution_and_unknown_values_fall_back_to_the_default():
    assert [(r.key, r.resolution) for r in RANGES.values()] == [
        ("1h", "raw"),
        ("6h", "5m"),
        ("24h", "5m"),
        ("7d", "1h"),
        ("30d", "1h"),
    ]
    assert time_range("7d").span == datetime.timedelta(days=7)
    assert time_range(None) is DEFAULT_RANGE is time_range("1y")


def test_a_missing_value_or_a_hole_in_time_breaks_the_line():
    data = points([10, 20, None, 40, 50]) + points(
        [60, 70], start=NOW - datetime.timedelta(minutes=10)
    )
    svg = line_chart(
        [Series("GPU", data)], NOW - datetime.timedelta(hours=1), NOW, step=FIVE, title="t"
    )
    # 10-20 | 40-50 | (a 25-minute hole) 60-70: three lines
    assert svg.count("<polyline") == 3
    assert svg.count('class="chart-point"') == 6  # one hover title per value


def test_a_lone_point_is_a_dot_and_values_outside_the_window_are_left_out():
    data = [(NOW - datetime.timedelta(days=2), 99.0), (NOW - datetime.timedelta(minutes=30), 5.0)]
    svg = line_chart(
        [Series("GPU", data)], NOW - datetime.timedelta(hours=1), NOW, step=FIVE, title="t"
    )
    assert "<polyline" not in svg and 'r="1.8"' in svg
    assert ": 99%" not in svg and ": 5%" in svg


def test_axes_gridlines_and_round_time_ticks():
    svg = line_chart(
        [Series("GPU", points([1, 2, 3]))],
        NOW - datetime.timedelta(hours=24),
        NOW,
        step=FIVE,
        title="t",
    )
    assert [m for m in re.findall(r">(\d+%)</text>", svg)] == ["0%", "50%", "100%"]
    ticks = re.findall(r'text-anchor="middle">([^<]+)<', svg)
    assert 3 <= len(ticks) <= 6 and all(re.fullmatch(r"\d\d:00", t) for t in ticks)
    week = line_chart(
        [Series("GPU", points([1, 2]))], NOW - datetime.timedelta(days=7), NOW, step=FIVE, title="t"
    )
    assert all(
        re.fullmatch(r"\d\d [A-Z][a-z]{2}", t)
        for t in re.findall(r'text-anchor="middle">([^<]+)<', week)
    )


def test_nothing_to_draw_is_an_empty_string_and_labels_are_escaped():
    assert (
        line_chart([Series("GPU", points([None, None]))], NOW - FIVE, NOW, step=FIVE, title="t")
        == ""
    )
    svg = line_chart(
        [Series("<b>x</b>", points([5]))],
        NOW - datetime.timedelta(hours=1),
        NOW,
        step=FIVE,
        title="a <script>",
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
