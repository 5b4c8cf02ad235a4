"""Admin of API access keys: create one (its secret is shown once, in the page's message),
change its role, revoke it (``active``), or issue it a new secret."""
from __future__ import annotations

from django.contrib import admin, messages

from apps.api.models import AccessKey


@admin.register(AccessKey)
class AccessKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "key_id", "role", "active", "created_at", "last_used_at")
    list_filter = ("role", "active")
    search_fields = ("name", "key_id")
    readonly_fields = ("key_id", "created_at", "last_used_at")
    fields = ("name", "role", "active", "key_id", "created_at", "last_used_at")
    actions = ["revoke", "new_secret"]

    def save_model(self, request, obj, form, change):
        from apps.api import auth

        if not change:
            import secrets

            obj.key_id = secrets.token_hex(12)
            secret = obj.set_new_secret()
            super().save_model(request, obj, form, change)
            self.message_user(request, f"Access key {obj.key_id} created. Its secret, shown only now: {secret}",
                              messages.WARNING)
        else:
            super().save_model(request, obj, form, change)
        auth.forget_cached_keys()

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):
        from apps.api import auth

        count = queryset.update(active=False)
        auth.forget_cached_keys()
        self.message_user(request, f"{count} key(s) revoked")

    @admin.action(description="Issue a new secret (the old one stops working)")
    def new_secret(self, request, queryset):
        for key in queryset:
            secret = key.set_new_secret()
            key.save(update_fields=["secret_hash"])
            self.message_user(request, f"New secret of {key.key_id} ({key.name}), shown only now: {secret}",
                              messages.WARNING)
