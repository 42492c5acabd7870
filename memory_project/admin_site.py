"""The admin site with a dashboard on its index page (server-rendered: no CDN here)."""

import logging

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm as AuthenticationForm
from django.core.exceptions import ValidationError

from memory_project.charts import Series, bar_chart, horizontal_bars

logger = logging.getLogger(__name__)


def dashboard_charts(stats: dict) -> dict:
    """The dashboard's charts from dashboard_stats (memory_project/charts.py draws them)."""
    days = [day.strftime("%m-%d") for day, _ in stats["per_day"]]
    queue = stats["queue_by_day"]
    return {
        "memories": bar_chart("memories-per-day-chart", days, [
            Series("created", [n for _, n in stats["per_day"]]),
            Series("archived", [n for _, n in stats["archived_per_day"]])], y_label="memories"),
        "queue_size": bar_chart("queue-size-chart", [q.day.strftime("%m-%d") for q in queue],
                                [Series("waiting at day end", [q.pending for q in queue])], y_label="candidates"),
        "queue_age": bar_chart("queue-age-chart", [q.day.strftime("%m-%d") for q in queue],
                               [Series("oldest waiting (hours)", [round(q.oldest_age_hours, 1) for q in queue])],
                               y_label="hours"),
        "operations": horizontal_bars("operations-chart", [(o.kind, o.operations) for o in stats["extraction_ops"]],
                                      x_label="operations, last 30 days"),
        "traits": horizontal_bars("traits-chart", [(r["label"], r["count"]) for r in stats["traits"]],
                                  x_label="traits"),
        "health": horizontal_bars("health-chart", [
            ("embedding pending", stats["embedding_backlog"].get("pending", 0)),
            ("embedding failed", stats["embedding_backlog"].get("failed", 0)),
            ("failed jobs", stats["failed_jobs"])], x_label="rows"),
    }


class ThrottledLoginForm(AuthenticationForm):
    """The admin's login, throttled per client (memories.network.client_of) by
    memories.ratelimit.login_buckets: after ADMIN_LOGIN_MAX_FAILURES failed
    attempts for one user name from one client, or
    ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT for any names from one client (an IPv6
    client counted per /64), further attempts from that client (right password
    or not) are refused until the lockout window ends. Other clients are not
    affected, so a guesser cannot lock the operator out; each failure and
    lockout is logged with the client's own address."""

    def clean(self):
        from memories import ratelimit  # lazily: it imports models, and this module may load before apps are ready
        from memories.network import client_of

        username = (self.cleaned_data.get("username") or "").casefold()
        address = client_of(self.request.META).address if self.request else ""
        refused = ratelimit.login_refused(username, address)
        if refused is not None:
            logger.warning("admin login refused: %r from %s is locked out (%d failures)", username, address,
                           refused.count)
            minutes = max(1, round(refused.retry_after / 60))
            raise ValidationError(f"Too many failed logins. Try again in about {minutes} minutes.",
                                  code="locked_out")
        try:
            cleaned = super().clean()
        except ValidationError:
            failures = ratelimit.login_failed(username, address)
            logger.warning("admin login failed for %r from %s (%d of %d)", username, address, failures,
                           ratelimit.login_limit().requests)
            raise
        ratelimit.login_succeeded(username, address)
        return cleaned


class MemoryAdminSite(admin.AdminSite):
    login_form = ThrottledLoginForm
    site_header = "Memory governance"
    site_title = "Memory governance"
    index_title = "Review and audit"
    # At 1366 px the nav sidebar took a fifth of the width from every list; the dashboard lists the apps
    # (Home, in the breadcrumbs, is one click away).
    enable_nav_sidebar = False

    def get_app_list(self, request, app_label=None):
        """The pages as the project names them ("Memories", "Review queue": memories.admin.base.TITLES)."""
        from memories.admin.base import TITLES  # lazily: the admin package imports models, loaded after this site

        apps = super().get_app_list(request, app_label)
        for app in apps:
            for model in app["models"]:
                model["name"] = TITLES.get(model["object_name"].lower(), (model["name"],))[0]
            app["models"].sort(key=lambda model: model["name"])
        return apps

    def index(self, request, extra_context=None):
        from memories.admin import operator_tenant, request_scope, visible_tenants
        from memories.job_states import failed_jobs_by_cause
        from memories.selectors import dashboard_stats

        extra_context = extra_context or {}
        scope = request_scope(request) if request.user.is_active and request.user.is_staff else None
        if scope is not None and not scope.sees_nothing:
            tenant = operator_tenant(request)
            tenants = list(visible_tenants(request)) if tenant is None else [tenant]
            if tenant is None and request.GET.get("tenant"):  # one tenant's dashboard, for who sees them all
                tenant = next((t for t in tenants if str(t.id) == request.GET["tenant"]), None)
            stats = dashboard_stats(tenant=tenant)
            stats["failed_by_cause"] = failed_jobs_by_cause(tenant.id if tenant else None)
            stats["charts"] = dashboard_charts(stats)
            stats["tenants"], stats["chosen"] = tenants, tenant
            extra_context["dashboard"] = stats
        return super().index(request, extra_context)
