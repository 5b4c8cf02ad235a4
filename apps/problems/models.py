"""Saved views of the executions list: a name and the search's query string."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class SavedView(models.Model):
    """One saved search of ``/executions/``: ``name`` (unique, shown in the list and used
    in its address ``/executions/view/<name>``) and ``query`` (the search's URL query
    string without paging, e.g. ``status=FAILED&name=orders``). Shared: every user who
    may view executions sees every saved view; operators save and delete them."""

    name = models.CharField(max_length=100, unique=True)
    query = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
