"""WSGI entry point (for gunicorn-style deployments of the stateless API)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")
application = get_wsgi_application()
