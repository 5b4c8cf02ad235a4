"""The database a process will use, in words, for the ``make run`` banner.

``python -m conductor_web.dburl`` prints one line such as ``PostgreSQL database conductor
on 127.0.0.1:5432 as conductor (DATABASE_URL)`` or ``SQLite file /srv/var/conductor.sqlite3
(the default: DATABASE_URL is not set)``. It reads the environment as
``conductor_web/settings.py`` does (``DATABASE_URL``, ``CONDUCTOR_VAR_DIR``) without
loading Django, and never prints a password.
"""
from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def describe_database(url: str | None, var_dir: Path) -> str:
    """One line naming the engine and where the data is: ``url`` is ``DATABASE_URL`` (None
    or empty: the SQLite default ``var_dir/conductor.sqlite3``). The password of a
    PostgreSQL URL is left out. Raises ValueError for a URL dj-database-url cannot read."""
    if not url:
        return f"SQLite file {(var_dir / 'conductor.sqlite3').resolve()} (the default: DATABASE_URL is not set)"
    config = dj_database_url.parse(url)
    engine = config["ENGINE"]
    if engine == "django.db.backends.sqlite3":
        return f"SQLite file {Path(config['NAME']).resolve()} (DATABASE_URL)"
    if "postgresql" in engine:
        where = f"{config.get('HOST') or 'localhost'}:{config.get('PORT') or 5432}"
        user = f" as {config['USER']}" if config.get("USER") else ""
        return f"PostgreSQL database {config['NAME']} on {where}{user} (DATABASE_URL)"
    return f"{engine.rsplit('.', 1)[-1]} database {config.get('NAME')} (DATABASE_URL)"


if __name__ == "__main__":
    print(describe_database(os.environ.get("DATABASE_URL"),
                            Path(os.environ.get("CONDUCTOR_VAR_DIR", BASE_DIR / "var"))))
