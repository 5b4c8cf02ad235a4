"""``manage.py create_access_key NAME [--role worker]``: a new API access key for an
application; prints the key id and the secret (shown only now: only its hash is kept)."""
from django.core.management.base import BaseCommand, CommandError

from apps.api.models import ROLE_WORKER, ROLES, AccessKey


class Command(BaseCommand):
    help = "Create an API access key (keyId/keySecret for the SDKs' CONDUCTOR_AUTH_KEY/CONDUCTOR_AUTH_SECRET)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="application name (shown in the admin and in /api/token/userInfo)")
        parser.add_argument("--role", default=ROLE_WORKER, choices=ROLES,
                            help="read_only < worker < operator < admin (default: worker)")
        parser.add_argument("--env", action="store_true",
                            help="print as CONDUCTOR_AUTH_KEY=... / CONDUCTOR_AUTH_SECRET=... lines only")

    def handle(self, *args, name, role, env, **options):
        if not name.strip():
            raise CommandError("name must not be empty")
        key, secret = AccessKey.create(name=name.strip(), role=role)
        if env:
            self.stdout.write(f"CONDUCTOR_AUTH_KEY={key.key_id}\nCONDUCTOR_AUTH_SECRET={secret}")
            return
        self.stdout.write(f"Access key for {key.name} ({key.role})\n"
                          f"  keyId:     {key.key_id}\n"
                          f"  keySecret: {secret}\n"
                          "The secret is shown only now. SDKs read it from CONDUCTOR_AUTH_KEY / CONDUCTOR_AUTH_SECRET.")
