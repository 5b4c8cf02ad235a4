"""``manage.py install_schedules``: create (idempotently) the django-q2 Schedule that
restarts the sweeper loop when no loop holds its lease, and queue a loop now
(``apps.engine.jobs.install_schedules``)."""
from django.core.management.base import BaseCommand

from apps.engine import jobs


class Command(BaseCommand):
    help = "Install the one-minute django-q2 schedule that keeps the sweeper loop running."

    def handle(self, *args, **options):
        jobs.install_schedules()
        self.stdout.write("schedules: sweeper loop queued; its one-minute safety net installed")
