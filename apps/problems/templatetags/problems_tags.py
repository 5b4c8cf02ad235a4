"""Template tags that put the problem views into the UI's own pages: the executions
list's bar (status counts, one-click views, saved views, export, the search as code) and
the execution page's "why is it stuck?" panel."""
from __future__ import annotations

from django import template
from django.http import QueryDict
from django.urls import reverse

from apps.problems import listing, stuck
from apps.problems.models import SavedView

register = template.Library()


@register.inclusion_tag("problems/_executions_bar.html", takes_context=True)
def problems_bar(context) -> dict:
    """The bar above the executions table, for the page's ``query`` (a SearchQuery) and
    ``request``."""
    request = context["request"]
    query = context["query"]
    base = request.GET.copy()
    for key in ("page", "after", "before", "saved"):
        base.pop(key, None)

    def url_with(**params) -> str:
        """This search with ``params`` replacing its own (a list value: repeated)."""
        q = base.copy()
        for key, values in params.items():
            q.setlist(key, values)
        return "?" + q.urlencode()

    counts = listing.status_counts(query)
    status_links = [{"status": s, "count": n, "more": n > listing.COUNT_CAP, "on": s in query.statuses,
                     "url": url_with(status=[] if query.statuses == [s] else [s])} for s, n in counts.items()]
    quick = []
    for key, label, params in listing.QUICK_VIEWS:
        q = request.GET.__class__(mutable=True)
        for k, v in params.items():
            q.setlist(k, v)
        on = all(sorted(request.GET.getlist(k)) == sorted(v) for k, v in params.items())
        quick.append({"key": key, "label": label, "url": "?" + q.urlencode(), "on": on})
    search = base.copy()
    search.pop("csrfmiddlewaretoken", None)
    api_url = request.build_absolute_uri("/api")
    return {"counts": status_links, "total": sum(counts.values()), "total_more": any(c["more"] for c in status_links),
            "quick": quick, "cap": listing.COUNT_CAP,
            "saved": list(SavedView.objects.all()[:100]), "saved_name": request.GET.get("saved", ""),
            "search": search.urlencode(), "code": listing.as_code(query, api_url),
            "can_operate": context.get("can_operate"), "csrf_token": context.get("csrf_token"),
            "export_max": listing.EXPORT_MAX}


@register.inclusion_tag("problems/_stuck_panel.html", takes_context=True)
def stuck_panel(context, wf) -> dict:
    """The "why is it stuck?" panel of execution ``wf`` (a WorkflowState): its pending
    tasks' diagnosis while it is RUNNING, nothing otherwise."""
    return {"entries": stuck.diagnose(wf.workflow_id) if wf.status == "RUNNING" else [],
            "status": wf.status, "workflow_id": wf.workflow_id, "request": context.get("request")}



@register.inclusion_tag("problems/_attention.html")
def problem_view_links() -> dict:
    """The one-click problem views as links to the executions list (the Overview's "Needs
    attention" card), so a stuck execution is two clicks from the home page: the view, then
    the execution."""
    links = []
    for key, label, params in listing.QUICK_VIEWS:
        q = QueryDict(mutable=True)
        for k, v in params.items():
            q.setlist(k, v)
        links.append({"key": key, "label": label, "url": reverse("ui:executions") + "?" + q.urlencode()})
    return {"quick": links}
