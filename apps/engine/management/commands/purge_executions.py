"""``manage.py purge_executions``: remove terminal executions older than an age, with
their tasks and logs, in bounded batches (``apps.engine.retention``).

    manage.py purge_executions --older-than 30d --status COMPLETED [--status FAILED] [--dry-run]
    manage.py purge_executions --configured      # the CONDUCTOR_RETENTION policy

``--older-than`` takes ms, s, m, h or d (default unit: days). Without ``--status`` every
terminal status is meant. Prints one line per status with the count removed (or, with
``--dry-run``, the count that would be).
"""
from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import InvalidInput
from apps.engine import retention


class Command(BaseCommand):
    help = "Remove terminal workflow executions older than an age (with their tasks and logs)."

    def add_arguments(self, parser):
        parser.add_argument("--older-than", help="age such as 30d, 12h, 90m")
        parser.add_argument("--status", action="append", choices=retention.TERMINAL,
                            help="terminal status to purge (repeatable; default: all four)")
        parser.add_argument("--configured", action="store_true",
                            help="use the CONDUCTOR_RETENTION policy instead of --older-than/--status")
        parser.add_argument("--batch-size", type=int, default=None,
                            help="executions per transaction (default: CONDUCTOR_RETENTION_BATCH_EXECUTIONS)")
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")

    def handle(self, *args, **options):
        try:
            if options["configured"]:
                policy = retention.configured_policy()
            elif options["older_than"]:
                age = retention.parse_age(options["older_than"], "--older-than")
                policy = {status: age for status in (options["status"] or retention.TERMINAL)}
            else:
                raise CommandError("give --older-than AGE (or --configured)")
        except InvalidInput as exc:
            raise CommandError(str(exc)) from exc
        if options["batch_size"] is not None and options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        totals = retention.purge(policy, batch_size=options["batch_size"], dry_run=options["dry_run"])
        verb = "would remove" if options["dry_run"] else "removed"
        for key in sorted(policy):
            self.stdout.write(f"{key}: {verb} {totals.get(key, 0)}")
