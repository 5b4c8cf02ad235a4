"""``manage.py rotate_secrets``: re-encrypt every stored secret with the first key of
``CONDUCTOR_SECRETS_KEYS`` (docs/secrets.md, rotation). Run it after putting the new key
first; then the old key can be dropped from the list."""
from django.core.management.base import BaseCommand

from apps.metadata.secrets import secret_rotate


class Command(BaseCommand):
    help = "Re-encrypt every secret with the first key of CONDUCTOR_SECRETS_KEYS."

    def handle(self, *args, **options):
        count = secret_rotate()
        self.stdout.write(f"{count} secret(s) re-encrypted with the first key of CONDUCTOR_SECRETS_KEYS")
