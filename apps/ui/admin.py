"""The audit log in the Django admin: read-only, searchable by user, action and target."""
from django.contrib import admin

from apps.ui.models import AuditLog


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    """Audit entries can be looked at and filtered, never edited or added by hand."""

    list_display = ("created_at", "username", "action", "target", "ok", "bulk", "message")
    list_filter = ("action", "ok", "bulk")
    search_fields = ("username", "target", "message")
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        """Entries are written by the actions only."""
        return False

    def has_change_permission(self, request, obj=None):
        """Entries are never edited."""
        return False
