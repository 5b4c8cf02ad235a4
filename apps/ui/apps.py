from django.apps import AppConfig


class UiConfig(AppConfig):
    name = "apps.ui"
    label = "ui"
    default_auto_field = "django.db.models.BigAutoField"
