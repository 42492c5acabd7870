"""The admin site with a dashboard on its index page (server-rendered: no CDN here)."""

import logging

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm as AuthenticationForm
from django.core.exceptions import ValidationError
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


logger = logging.getLogger(__name__)


class ThrottledLoginForm(AuthenticationForm):
    """The admin's login: after ADMIN_LOGIN_MAX_FAILURES failed attempts for one
    user name from one address, further attempts (right password or not) are
    refused until the lockout window ends; each failure and lockout is logged."""

    def clean(self):
        from memories import ratelimit

        username = (self.cleaned_data.get("username") or "").casefold()
        address = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
        bucket, limit = f"login:{username}:{address}", ratelimit.login_limit()
        state = ratelimit.peek(bucket, limit)
        if limit.requests > 0 and state.count >= limit.requests:
            logger.warning("admin login refused: %r from %s is locked out (%d failures)", username, address,
                           state.count)
            minutes = max(1, round((state.retry_after or limit.seconds) / 60))
            raise ValidationError(f"Too many failed logins. Try again in about {minutes} minutes.",
                                  code="locked_out")
        try:
            cleaned = super().clean()
        except ValidationError:
            failures = ratelimit.hit(bucket, limit).count
            logger.warning("admin login failed for %r from %s (%d of %d)", username, address, failures,
                           limit.requests)
            raise
        ratelimit.reset(bucket, limit)  # a successful login clears the failures before it
        return cleaned


class MemoryAdminSite(admin.AdminSite):
    login_form = ThrottledLoginForm
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
