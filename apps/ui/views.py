"""Operator pages (server-rendered)."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from apps.engine.models import WorkflowExecution


@login_required
def home(request):
    """Landing page: the latest workflow executions."""
    executions = WorkflowExecution.objects.order_by("-create_time").only(
        "workflow_id", "workflow_name", "workflow_version", "status", "create_time", "correlation_id")[:50]
    return render(request, "ui/home.html", {"executions": executions})
