"""``manage.py install_schedules``: create (idempotently) the django-q2 Schedules of the
cluster (the sweeper's one-minute safety net and the retention run) and queue a sweeper
loop now if none holds the lease (``apps.engine.jobs.install_schedules``)."""
from django.core.management.base import BaseCommand

from apps.engine import jobs


class Command(BaseCommand):
    help = "Install the django-q2 schedules of the cluster: sweeper safety net and retention."

    def handle(self, *args, **options):
        jobs.install_schedules()
        self.stdout.write("schedules: sweeper safety net (every minute) and retention installed")
