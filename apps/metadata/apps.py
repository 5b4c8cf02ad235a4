from django.apps import AppConfig


class MetadataConfig(AppConfig):
    name = "apps.metadata"
    label = "metadata"
    default_auto_field = "django.db.models.BigAutoField"
