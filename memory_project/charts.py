"""Server-rendered SVG charts for the admin dashboard (no CDN, no script): axes with ticks, labels,
a legend, and each value on hover (an SVG <title>)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

COLOURS = ("#417690", "#c0504d", "#9bbb59", "#8064a2", "#f79646", "#4bacc6")


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float]


def nice_ceiling(value: float) -> float:
    """The axis top: 1, 2, 2.5 or 5 times a power of ten at or above the largest value (a pure function)."""
    if value <= 0:
        return 1.0
    power = 10 ** (len(str(int(value))) - 1) if value >= 1 else 1
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def bar_chart(chart_id: str, labels: Sequence[str], series: Sequence[Series], *, y_label: str,
              width: int = 720, height: int = 200, label_every: int = 7) -> SafeString:
    """Grouped vertical bars: one group per label, one bar per series."""
    left, right, top, bottom = 44, 10, 22, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = nice_ceiling(max((v for s in series for v in s.values), default=0))
    group = plot_w / max(len(labels), 1)
    bar = max((group - 2) / max(len(series), 1), 1)
    bars = []
    for s_index, one in enumerate(series):
        for i, value in enumerate(one.values):
            h = plot_h * value / peak
            bars.append((f"{left + i * group + 1 + s_index * bar:.1f}", f"{top + plot_h - h:.1f}", f"{bar:.1f}",
                         f"{h:.1f}", COLOURS[s_index % len(COLOURS)], labels[i], one.name, _number(value)))
    rects = format_html_join("", '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {}</title>'
                                 "</rect>", bars)
    ticks = format_html_join("", '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#ccc"/>'
                                 '<text x="{}" y="{}" font-size="10" text-anchor="end">{}</text>',
                             ((left, width - right, f"{top + plot_h * (1 - f):.1f}", f"{top + plot_h * (1 - f):.1f}",
                               left - 4, f"{top + plot_h * (1 - f) + 3:.1f}", _number(peak * f))
                              for f in (0, 0.5, 1)))
    x_labels = format_html_join("", '<text x="{}" y="{}" font-size="10" text-anchor="middle">{}</text>',
                                ((f"{left + (i + 0.5) * group:.1f}", height - bottom + 14, labels[i])
                                 for i in range(0, len(labels), max(label_every, 1))))
    legend = format_html_join("", '<rect x="{}" y="4" width="10" height="10" fill="{}"/>'
                                  '<text x="{}" y="13" font-size="11">{}</text>',
                              ((left + 120 * i, COLOURS[i % len(COLOURS)], left + 120 * i + 14, s.name)
                               for i, s in enumerate(series)))
    axes = format_html('<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#333"/>'
                       '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#333"/>'
                       '<text x="12" y="{}" font-size="10" transform="rotate(-90 12 {})" text-anchor="middle">{}'
                       "</text>", left, left, top, top + plot_h, left, width - right, top + plot_h, top + plot_h,
                       top + plot_h / 2, top + plot_h / 2, y_label)
    return format_html('<svg id="{}" class="dashboard-chart" role="img" aria-label="{}" width="{}" height="{}" '
                       'viewBox="0 0 {} {}">{}{}{}{}{}</svg>', chart_id, y_label, width, height, width, height,
                       ticks, axes, rects, x_labels, legend)


def horizontal_bars(chart_id: str, rows: Sequence[tuple[str, float]], *, x_label: str,
                    width: int = 380) -> SafeString:
    """One bar per category, its value written at its end."""
    if not rows:
        return mark_safe(f'<p id="{chart_id}" class="dashboard-empty">none yet</p>')
    row_h, left = 22, 12 + 6 * max(len(label) for label, _ in rows)  # room for the longest label
    peak = nice_ceiling(max(v for _, v in rows))
    height = row_h * len(rows) + 24
    bars = format_html_join("", '<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>'
                                '<rect x="{}" y="{}" width="{}" height="14" fill="{}"><title>{}: {}</title></rect>'
                                '<text x="{}" y="{}" font-size="10">{}</text>',
                            ((left - 6, i * row_h + 15, label, left, i * row_h + 4,
                              f"{(width - left - 40) * value / peak:.1f}", COLOURS[0], label, _number(value),
                              f"{left + (width - left - 40) * value / peak + 4:.1f}", i * row_h + 15, _number(value))
                             for i, (label, value) in enumerate(rows)))
    axis = format_html('<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#333"/>'
                       '<text x="{}" y="{}" font-size="10" text-anchor="end">{}</text>',
                       left, left, 0, height - 20, width - 4, height - 4, x_label)
    return format_html('<svg id="{}" class="dashboard-chart" role="img" aria-label="{}" width="{}" height="{}" '
                       'viewBox="0 0 {} {}">{}{}</svg>', chart_id, x_label, width, height, width, height, bars, axis)
