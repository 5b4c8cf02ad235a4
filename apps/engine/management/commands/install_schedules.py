"""``manage.py install_schedules``: create (idempotently) the django-q2 Schedule that
restarts the sweeper loop when no loop holds its lease (``apps.engine.jobs``)."""
from django.core.management.base import BaseCommand

from apps.engine import jobs


class Command(BaseCommand):
    help = "Install the one-minute django-q2 schedule that keeps the sweeper loop running."

    def handle(self, *args, **options):
        jobs.install_schedules()
        self.stdout.write("schedules: sweeper safety net installed (runs every minute in the qcluster)")
