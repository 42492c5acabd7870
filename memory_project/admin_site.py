"""The admin site with a dashboard on its index page (server-rendered: no CDN here)."""

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe


def bar_chart_svg(series: list[tuple], width: int = 720, height: int = 160):
    """A plain SVG bar chart of (date, count) pairs."""
    top = max((count for _, count in series), default=0) or 1
    bar = width / max(len(series), 1)
    bars = format_html_join("", '<rect x="{}" y="{}" width="{}" height="{}" fill="#417690">'
                                "<title>{}: {}</title></rect>",
                            ((f"{i * bar + 1:.1f}", f"{height - 20 - (count / top) * (height - 30):.1f}",
                              f"{bar - 2:.1f}", f"{(count / top) * (height - 30):.1f}", day.isoformat(), count)
                             for i, (day, count) in enumerate(series)))
    labels = format_html('<text x="0" y="{}" font-size="11">{}</text><text x="{}" y="{}" font-size="11" '
                         'text-anchor="end">{}</text><text x="0" y="12" font-size="11">max {}</text>',
                         height - 4, series[0][0].isoformat() if series else "", width, height - 4,
                         series[-1][0].isoformat() if series else "", top)
    return format_html('<svg id="per-day-chart" role="img" width="{}" height="{}" viewBox="0 0 {} {}">{}{}</svg>',
                       width, height, width, height, bars, mark_safe(labels))


class MemoryAdminSite(admin.AdminSite):
    site_header = "Memory governance"
    site_title = "Memory governance"
    index_title = "Review and audit"

    def index(self, request, extra_context=None):
        from memories.admin import operator_tenant, request_scope
        from memories.selectors import dashboard_stats

        extra_context = extra_context or {}
        scope = request_scope(request) if request.user.is_active and request.user.is_staff else None
        if scope is not None and not scope.sees_nothing:
            stats = dashboard_stats(tenant=operator_tenant(request))
            stats["chart_svg"] = bar_chart_svg(stats["per_day"])
            extra_context["dashboard"] = stats
        return super().index(request, extra_context)
