"""A node's topology drawing as inline SVG markup.

Written in Python rather than a template: a MIG node has some 200 placements of a dozen
elements each, which the template engine renders ten times slower than string joins. Every
text is escaped here (``html.escape``: ``&``, ``<``, ``>`` and both quotes); the result is
marked safe for the page. The classes match
``static/css/portal.css`` (the device list's state colours).
"""

from __future__ import annotations

from html import escape

from django.utils.safestring import SafeString, mark_safe

from devices.topology_drawing import Drawing, GpuShape

__all__ = ["render_svg"]

_HATCH = (
    '<pattern id="topo-hatch" patternUnits="userSpaceOnUse" width="6" height="6" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f8f9fa"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#ced4da" stroke-width="3"/></pattern>'
)


def _gpu(gpu: GpuShape) -> list[str]:
    device = gpu.box.device
    state = escape(device.state)
    out = [
        f'<g class="topo-gpu" transform="translate({gpu.x} {gpu.y})" '
        f'data-device="{escape(device.name)}" data-state="{state}">',
        f'<a href="{escape(gpu.url)}"><title>{escape(gpu.title)}</title>',
        f'<rect class="topo-box topo-{state}" width="{gpu.w}" height="{gpu.h}" rx="4"/>',
    ]
    if gpu.shade_h:
        out.append(
            f'<rect class="topo-shade topo-{state}" y="{gpu.shade_y}" width="{gpu.w}" '
            f'height="{gpu.shade_h}" rx="4"/>'
        )
    out += [
        f'<text class="topo-name" x="8" y="17">{escape(device.name)}</text>',
        f'<text class="topo-state topo-{state}" x="{gpu.right}" y="17" text-anchor="end">'
        f"{escape(gpu.state_label)}</text>",
        f'<text class="topo-model" x="8" y="32">{escape(gpu.model)}</text></a>',
        '<g class="topo-utilisation"><text class="topo-small" x="8" y="52">GPU</text>',
    ]
    if gpu.has_data:
        out.append(f'<rect class="topo-track" x="36" y="43" width="{gpu.util_bar_w}" height="10"/>')
        if gpu.util_w:
            out.append(f'<rect class="topo-util" x="36" y="43" width="{gpu.util_w}" height="10"/>')
        muted = ""
    else:
        out.append(
            f'<rect x="36" y="43" width="{gpu.util_bar_w}" height="10" fill="url(#topo-hatch)" '
            'stroke="#ced4da"/>'
        )
        muted = " topo-muted"
    out.append(
        f'<text class="topo-small{muted}" x="{gpu.right}" y="52" text-anchor="end">'
        f"{escape(gpu.util_text)}</text></g>"
    )
    if gpu.partitions:
        out.append('<g class="topo-placements">')
        out += [
            f'<text class="topo-tiny topo-muted" x="{x}" y="{gpu.grid_y - 3}" '
            f'text-anchor="middle">{escape(label)}</text>'
            for x, label in gpu.slice_labels
        ]
        out += [
            f'<line class="topo-grid" x1="{x}" x2="{x}" y1="{gpu.grid_y}" '
            f'y2="{gpu.grid_y + gpu.grid_h}"/>'
            for x in gpu.slice_lines
        ]
        for part in gpu.partitions:
            partition = part.partition
            part_state = escape(partition.device.state)
            unplaced = " topo-unplaced" if partition.start is None else ""
            out.append(
                f'<a href="{escape(part.url)}" class="topo-partition" '
                f'data-device="{escape(partition.device.name)}" data-state="{part_state}">'
                f"<title>{escape(part.title)}</title>"
                f'<rect class="topo-box topo-{part_state}{unplaced}" x="{part.x}" y="{part.y}" '
                f'width="{part.w}" height="{part.h}" rx="2"/>'
            )
            if part.util_w:
                out.append(
                    f'<rect class="topo-util" x="{part.x}" y="{part.y + part.h - 3}" '
                    f'width="{part.util_w}" height="3"/>'
                )
            if part.label:
                out.append(
                    f'<text class="topo-tiny" x="{part.x + 3}" y="{part.y + 9}">'
                    f"{escape(part.label)}</text>"
                )
            out.append("</a>")
        out.append("</g>")
        for counter in gpu.counters:
            out.append(
                f'<g class="topo-counter"><title>{escape(counter.label)} used by held devices: '
                f"{escape(counter.value)}</title>"
                f'<text class="topo-tiny" x="8" y="{counter.y + 9}">{escape(counter.label)}</text>'
                f'<rect class="topo-track" x="80" y="{counter.y + 1}" width="{counter.w}" '
                'height="11"/>'
            )
            if counter.used_w:
                out.append(
                    f'<rect class="topo-used" x="80" y="{counter.y + 1}" '
                    f'width="{counter.used_w}" height="11"/>'
                )
            out.append(
                f'<text class="topo-tiny" x="{gpu.right - 3}" y="{counter.y + 9}" '
                f'text-anchor="end">{escape(counter.value)}</text></g>'
            )
    for line in gpu.claims:
        if line.url:
            out.append(
                f'<a href="{escape(line.url)}" class="topo-claim"><title>Claim '
                f"{escape(line.text)}</title>"
                f'<text class="topo-small topo-link" x="8" y="{line.y}">{escape(line.text)}'
                "</text></a>"
            )
        else:
            out.append(
                f'<text class="topo-small topo-muted" x="8" y="{line.y}">{escape(line.text)}</text>'
            )
    out.append("</g>")
    return out


def render_svg(drawing: Drawing, title: str) -> SafeString:
    """The ``<svg>`` element of ``drawing``: frames, then GPU boxes with their placements,
    each a link with a ``<title>``; ``title`` labels the whole figure."""
    out = [
        f'<svg class="topology-svg" viewBox="{drawing.view_box}" width="{drawing.width + 4}" '
        f'height="{drawing.height + 4}" role="group" aria-labelledby="topology-title" '
        'data-testid="topology-svg">',
        f'<title id="topology-title">{escape(title)}</title>',
        f"<defs>{_HATCH}</defs>",
    ]
    for frame in drawing.frames:
        unknown = " topo-unknown" if frame.is_unknown else ""
        out.append(
            f'<g class="topo-frame topo-{escape(frame.level)}{unknown}">'
            f"<title>{escape(frame.label)}</title>"
            f'<rect x="{frame.x}" y="{frame.y}" width="{frame.w}" height="{frame.h}" rx="6"/>'
            f'<text x="{frame.x + 8}" y="{frame.y + 14}">{escape(frame.label)}</text></g>'
        )
    for gpu in drawing.gpus:
        out += _gpu(gpu)
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - every text above is escaped
