"""The ``conductor`` operator command (a REST client of this server; see ``apps.cli.main``)."""
