from django.apps import AppConfig


class ProblemsConfig(AppConfig):
    """The operator UI's problem views (saved views are its one model)."""

    name = "apps.problems"
    label = "problems"
    default_auto_field = "django.db.models.BigAutoField"
