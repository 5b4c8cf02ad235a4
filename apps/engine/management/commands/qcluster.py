"""``manage.py qcluster``: django-q2's cluster, started and stopped by
``apps.engine.cluster.ClusterSupervisor`` (a stop that always ends, within
``CONDUCTOR_CLUSTER_STOP_GRACE_SECONDS``). Same options as django-q2's command, which
this one replaces (``apps.engine`` is listed before ``django_q`` in INSTALLED_APPS)."""
import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Starts a django-q2 cluster (system tasks, sweeper, schedules); SIGTERM or SIGINT stops it."

    def add_arguments(self, parser):
        parser.add_argument("--run-once", action="store_true", dest="run_once", default=False,
                            help="Start the cluster, then stop it at once.")
        parser.add_argument("-n", "--name", dest="cluster_name", default=None,
                            help="Cluster name instead of Q_CLUSTER's (as django-q2's qcluster).")

    def handle(self, *args, **options):
        from apps.engine.cluster import ClusterSupervisor

        settings.SECRET_KEY  # noqa: B018 - as django-q2: no cluster without a signing key
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        status = ClusterSupervisor().run(run_once=options["run_once"])
        sys.stdout.flush()
        if status:
            sys.exit(status)
