"""``{% utilisation_chart span title target "GPU" points "Memory" points %}``: a time-range
picker, a server-drawn line chart (``toolkit.charts``) of one or more series of percentages, its
legend, and an empty state. ``target`` is the id of the element the picker's links refresh
(with htmx; plain links without it)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone

from toolkit.charts import RANGES, Series, TimeRange, line_chart

register = template.Library()


@register.inclusion_tag("includes/utilisation_chart.html", takes_context=True)
def utilisation_chart(
    context: dict[str, Any], span: TimeRange, title: str, target: str, *pairs: Any
) -> dict[str, Any]:
    series = [
        Series(str(label), list(points or []), f"chart-{position + 1}")
        for position, (label, points) in enumerate(zip(pairs[::2], pairs[1::2], strict=True))
    ]
    now = timezone.now()
    request = context.get("request")
    links = []
    for key, option in RANGES.items():
        query = request.GET.copy() if request is not None else None
        if query is not None:
            query["range"] = key
        links.append(
            {
                "key": key,
                "label": option.label,
                "href": f"?{query.urlencode()}" if query is not None else f"?range={key}",
                "current": key == span.key,
            }
        )
    known = [v for s in series for _, v in s.points if v is not None]
    first = [v for _, v in series[0].points if v is not None] if series else []
    return {
        "chart": line_chart(series, span.start(now), now, step=span.step, title=title),
        "series": series,
        "span": span,
        "links": links,
        "target": target,
        "title": title,
        "has_data": bool(known),
        "average": round(sum(first) / len(first), 1) if first else None,
        "resolution": {
            "raw": "every reading",
            "5m": "5-minute averages",
            "1h": "hourly averages",
        }[span.resolution],
    }
