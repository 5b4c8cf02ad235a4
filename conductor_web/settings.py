"""Settings for conductor-web, read from the environment (healthchecks style).

Every setting has a default that runs the embedded setup (SQLite in ``var/``,
django-q2 on the ORM broker, in-memory channel layer). Production changes only
environment variables; docs/configuration.md lists them.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str = "False") -> bool:
    """Read a boolean env var: ``True``/``False``, ``on``/``off``, ``yes``/``no`` or 1/0 (any case)."""
    value = os.environ.get(name, default).strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name} must be True or False (on/off), not {value!r}")


def envint(name: str, default: int) -> int:
    """Read an integer env var, falling back to ``default`` when unset or empty."""
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def envfloat(name: str, default: float) -> float:
    """Read a number env var, falling back to ``default`` when unset or empty."""
    value = os.environ.get(name, "")
    return float(value) if value.strip() else default


DEBUG = envbool("DEBUG", "False")
VAR_DIR = Path(os.environ.get("CONDUCTOR_VAR_DIR", BASE_DIR / "var"))
_DEV_SECRET_KEY = "conductor-web-insecure-development-key-change-me"
# Placeholders shipped in deploy/ (conductor-web.env.example, kubernetes.yaml, compose).
_PLACEHOLDER_SECRET = re.compile(r"change-?me", re.IGNORECASE)


def _secret_key() -> str:
    """SECRET_KEY signs sessions, CSRF tokens and the API's JWTs. From the environment
    (the same value on every process and host); a placeholder from deploy/ is refused
    (ImproperlyConfigured) unless DEBUG. Unset: DEBUG uses a fixed development key; else
    a random key generated once into ``VAR_DIR/secret_key`` (mode 0600), shared by the
    server and cluster of one machine (a deployment of several hosts sets SECRET_KEY)."""
    value = os.environ.get("SECRET_KEY", "").strip()
    if value:
        if not DEBUG and _PLACEHOLDER_SECRET.search(value):
            raise ImproperlyConfigured("SECRET_KEY is still the placeholder from deploy/: set a long random value "
                                       "(python -c 'import secrets; print(secrets.token_urlsafe(50))')")
        return value
    if DEBUG:
        return _DEV_SECRET_KEY
    import secrets

    return generated_once("secret_key", lambda: secrets.token_urlsafe(50))


def generated_once(name: str, make) -> str:
    """The text of ``VAR_DIR/<name>`` (mode 0600), written with ``make()`` by the first
    process that needs it: the server and cluster of one machine share it. Written whole
    under a private name, then linked: of two processes starting together, one link wins
    and both read the winner's value."""
    path = VAR_DIR / name
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    tmp = VAR_DIR / f".{name}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(make())
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_text().strip()


def _secrets_keys() -> list[str]:
    """The Fernet keys (urlsafe base64 of 32 bytes) that encrypt the secrets store
    (apps.metadata.secrets): ``CONDUCTOR_SECRETS_KEYS``, comma-separated, the first
    encrypts and every one decrypts (rotation: put the new key first, run
    ``manage.py rotate_secrets``, then drop the old one). Empty when unset: the secrets
    store then generates one key, on first use (never at import, so a build step does not
    bake one into an image), into ``VAR_DIR/secrets_key`` (``generated_once``)."""
    return [k.strip() for k in os.environ.get("CONDUCTOR_SECRETS_KEYS", "").split(",") if k.strip()]


SECRET_KEY = _secret_key()
SECRETS_KEYS = _secrets_keys()
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

_CLUSTER_PROCESS = "qcluster" in sys.argv
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "django_filters",
    "channels",
    "apps.core",
    "apps.metadata",
    # before django_q: its `manage.py qcluster` replaces django-q2's (apps.engine.cluster)
    "apps.engine",
    "django_q",
    "apps.api",
    "apps.ui",
    "apps.problems",
    "apps.ai",
    "apps.agents",
    "apps.scheduler",
    "apps.listeners",
    "apps.files",
    "apps.alerts",
    "apps.brokers",
    "apps.overview",
    "apps.wmq",
    "apps.a2a",
]

MIDDLEWARE = [
    # first: chunked request bodies get their length before anything parses them
    "apps.api.middleware.ChunkedBodyMiddleware",
    # paths, query strings and UI form fields without NUL characters or lone surrogates
    # (PostgreSQL cannot hold them): 400 (Conductor's body under /api, a page elsewhere)
    "apps.api.middleware.TextGateMiddleware",
    # then: /api calls carry a token from POST /api/token (apps/api/auth.py)
    "apps.api.middleware.ApiAuthMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # last: a locked-out sign-in answers 429 (django-axes)
    "axes.middleware.AxesMiddleware",
]

# --- sign-in rate limit (django-axes) -------------------------------------------------
# The UI's and the admin's sign-in: after CONDUCTOR_LOGIN_FAILURE_LIMIT failed attempts for
# one user name from one address, that pair is refused (429) for
# CONDUCTOR_LOGIN_COOLOFF_MINUTES; a successful sign-in clears its count. Attempts are
# kept in the database (every server sees them); `manage.py axes_reset` lifts locks.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = envint("CONDUCTOR_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = envint("CONDUCTOR_LOGIN_COOLOFF_MINUTES", 15) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False

# The SDK posts to paths without a trailing slash; a redirect would turn a POST into a GET.
APPEND_SLASH = False

ROOT_URLCONF = "conductor_web.urls"
WSGI_APPLICATION = "conductor_web.wsgi.application"
ASGI_APPLICATION = "conductor_web.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # can_operate/can_view on every page, error pages included (the nav of a 404)
                "apps.ui.permissions.ui_context",
            ],
        },
    },
]

# --- HTTPS (check --deploy clean) ---------------------------------------------------
# CONDUCTOR_HTTPS=on: the server is reached over TLS (a proxy terminating it forwards
# X-Forwarded-Proto: https): cookies only over HTTPS, HSTS, plain-HTTP requests redirected
# except the probes a proxy or a scraper sends to a backend directly.
HTTPS = envbool("CONDUCTOR_HTTPS", "off")
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^health(/ready)?$", r"^api/health(/ready)?$", r"^metrics$", r"^actuator/prometheus$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = envint("CONDUCTOR_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("CONDUCTOR_HSTS_INCLUDE_SUBDOMAINS", "on")
    SECURE_HSTS_PRELOAD = envbool("CONDUCTOR_HSTS_PRELOAD", "on")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# --- Database -----------------------------------------------------------------------
# DATABASE_URL selects the engine: sqlite:///path (default: var/conductor.sqlite3)
# or postgres://user:pass@host:port/name (psycopg 3, pooled).
DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'conductor.sqlite3'}"
_db = dj_database_url.parse(DATABASE_URL)
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # One writer at a time: IMMEDIATE makes writers queue on the busy timeout instead of
    # failing on lock upgrade; WAL lets readers run beside the writer.
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": envint("SQLITE_BUSY_TIMEOUT_SECONDS", 30),
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    _db["TEST"] = {"NAME": os.environ.get("SQLITE_TEST_NAME") or str(VAR_DIR / "test_db.sqlite3")}
    # Keep each thread's SQLite connection open between requests (no server to pool).
    _db["CONN_MAX_AGE"] = None
    if not os.environ.get("DATABASE_URL"):
        VAR_DIR.mkdir(parents=True, exist_ok=True)
elif _db["ENGINE"] in ("django.db.backends.postgresql", "django.db.backends.postgresql_psycopg2"):
    _db["ENGINE"] = "django.db.backends.postgresql"
    _db["CONN_MAX_AGE"] = 0
    _db.setdefault("OPTIONS", {})
    # No pool in the django-q2 cluster: it forks its workers, and a forked child would
    # share the parent's pooled connections (close_all() only returns them to the pool).
    if envbool("DB_POOL", "True") and not _CLUSTER_PROCESS:
        _db["OPTIONS"]["pool"] = {
            "min_size": envint("DB_POOL_MIN", 2),
            "max_size": envint("DB_POOL_MAX", 20),
            "timeout": 30,
        }
    _db["OPTIONS"].setdefault("application_name", os.environ.get("DB_APPLICATION_NAME", "conductor-web"))
    # The engine's hot statements (apps.engine.store.sql_cursor) bind their parameters on
    # the server and are prepared once a connection has run them this many times.
    # DB_PREPARE_THRESHOLD=off for a pooler in transaction mode that cannot keep
    # prepared statements (Django's ORM cursors never prepare).
    _prepare = os.environ.get("DB_PREPARE_THRESHOLD", "5").strip().lower()
    _db["OPTIONS"]["prepare_threshold"] = None if _prepare in ("off", "none", "") else int(_prepare)
    # DB_SYNCHRONOUS_COMMIT=off trades durability of the last few hundred ms of commits
    # after a PostgreSQL crash (a task is then re-delivered, as at-least-once allows) for
    # commits that do not wait for the WAL flush. Default: PostgreSQL's own (on).
    if os.environ.get("DB_SYNCHRONOUS_COMMIT"):
        _db["OPTIONS"]["options"] = f"-c synchronous_commit={os.environ['DB_SYNCHRONOUS_COMMIT']}"
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = []

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
LOGIN_URL = "/admin/login/"

# --- REST framework: Conductor's contract, no auth, JSON only ------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.api.parsers.LenientJSONParser"],
    "EXCEPTION_HANDLER": "apps.api.exceptions.conductor_exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "apps.api.negotiation.IgnoreAcceptNegotiation",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# --- OpenAPI document of the API (/api-docs, /swagger-ui/index.html; apps/api/openapi.py)
SPECTACULAR_SETTINGS = {
    "TITLE": "conductor-web API",
    "DESCRIPTION": "Conductor's REST API as conductor-web serves it. Calls carry X-Authorization "
                   "with a token from POST /api/token when API authentication is on.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/api",
    "COMPONENT_SPLIT_REQUEST": False,
    "PREPROCESSING_HOOKS": ["apps.api.openapi.only_api_paths"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "apps.api.openapi.complete_document"],
    "APPEND_COMPONENTS": {"securitySchemes": {"api_key": {"type": "apiKey", "in": "header", "name": "X-Authorization"}}},
    "SECURITY": [{"api_key": []}],
    "DISABLE_ERRORS_AND_WARNINGS": True,
}

# --- django-q2 cluster: async system tasks, timers, sweeper -------------------------
Q_CLUSTER = {
    "name": os.environ.get("Q_CLUSTER_NAME", "conductor"),
    "workers": envint("Q_WORKERS", 4),
    "timeout": 60,
    "retry": 90,
    "max_attempts": 3,
    "ack_failures": True,
    "catch_up": False,
    "save_limit": 100,
    "poll": 0.2,
    "label": "Django Q2",
}
if os.environ.get("Q_REDIS_URL"):
    Q_CLUSTER["redis"] = os.environ["Q_REDIS_URL"]
else:
    Q_CLUSTER["orm"] = "default"
if envbool("Q_SYNC", "False"):
    Q_CLUSTER["sync"] = True

# --- Channels: live updates ----------------------------------------------------------
def redis_channel_layer(url: str, socket_timeout: float | None = None) -> dict:
    """The channels-redis layer on ``url``. redis-py 8 reads with a 5 s socket timeout by
    default, the length of channels-redis's blocking BZPOPMIN, so an idle consumer's
    receive loop would fail after 5 s (the WebSocket closes with 1011). The socket timeout
    (seconds, CHANNEL_REDIS_SOCKET_TIMEOUT, default 30) is set above the blocking read, so
    a dead Redis is still noticed; a ``socket_timeout`` in the URL's query string wins."""
    if socket_timeout is None:
        socket_timeout = float(os.environ.get("CHANNEL_REDIS_SOCKET_TIMEOUT") or 30)
    return {"BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": url, "socket_timeout": socket_timeout}]}}


if os.environ.get("CHANNEL_REDIS_URL"):
    CHANNEL_LAYERS = {"default": redis_channel_layer(os.environ["CHANNEL_REDIS_URL"])}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Engine --------------------------------------------------------------------------
CONDUCTOR = {
    # Identifies this server in error bodies ("instance") and as workerId of system tasks.
    "INSTANCE_ID": os.environ.get("CONDUCTOR_INSTANCE_ID", os.uname().nodename),
    # Sweeper tick (ms) and the length of one sweeper job's loop (s).
    "SWEEPER_TICK_MS": envint("CONDUCTOR_SWEEPER_TICK_MS", 250),
    # Kept short so a stopping cluster is not held by a long-running loop job.
    "SWEEPER_LOOP_SECONDS": envint("CONDUCTOR_SWEEPER_LOOP_SECONDS", 5),
    # The sweeper lease (ms), renewed on every tick by its holder (apps.engine.cluster);
    # how often a standby sweeper thread looks at it (s); how long a stopping cluster
    # worker waits for its sweeper thread's current tick (s).
    "SWEEPER_LEASE_MS": envint("CONDUCTOR_SWEEPER_LEASE_MS", 5_000),
    "SWEEPER_STANDBY_SECONDS": envfloat("CONDUCTOR_SWEEPER_STANDBY_SECONDS", 1.0),
    "SWEEPER_STOP_WAIT_SECONDS": envfloat("CONDUCTOR_SWEEPER_STOP_WAIT_SECONDS", 5.0),
    # After SIGTERM/SIGINT, `manage.py qcluster` waits this long (s) for the cluster's
    # orderly stop (each worker finishes the job in hand), then kills what is left
    # (apps.engine.cluster). Below scripts/run.sh's STOP_TIMEOUT (45 s) and
    # the systemd unit's TimeoutStopSec (70 s).
    "CLUSTER_STOP_GRACE_SECONDS": envfloat("CONDUCTOR_CLUSTER_STOP_GRACE_SECONDS", 40.0),
    # An async system task (HTTP) runs under a lease of its own (ms), renewed by the running
    # job this often (s) (apps.engine.jobs). A task not finished HTTP_REDISPATCH_MS after
    # its dispatch is handed to the cluster again, the interval growing with the task's age
    # up to HTTP_REDISPATCH_MAX_MS; an AI task once its provider timeout plus
    # AI_REDISPATCH_GRACE_MS passed. A SUB_WORKFLOW is re-checked this long (ms) after its
    # last change, repairing a lost "child ended" notice.
    "SYSTEM_TASK_LEASE_MS": envint("CONDUCTOR_SYSTEM_TASK_LEASE_MS", 5_000),
    "SYSTEM_TASK_LEASE_RENEW_SECONDS": envfloat("CONDUCTOR_SYSTEM_TASK_LEASE_RENEW_SECONDS", 1.0),
    "HTTP_REDISPATCH_MS": envint("CONDUCTOR_HTTP_REDISPATCH_MS", 5_000),
    "HTTP_REDISPATCH_MAX_MS": envint("CONDUCTOR_HTTP_REDISPATCH_MAX_MS", 60_000),
    "AI_REDISPATCH_GRACE_MS": envint("CONDUCTOR_AI_REDISPATCH_GRACE_MS", 30_000),
    "SUB_WORKFLOW_REPAIR_MS": envint("CONDUCTOR_SUB_WORKFLOW_REPAIR_MS", 30_000),
    # Upper bound of a long poll (ms); Conductor refuses more than 5000.
    "MAX_LONG_POLL_MS": 5000,
    # A waiting long poll is woken at once by a commit in its own process; tasks queued by
    # other processes (the cluster, other servers) are seen by a re-read this often (ms).
    "LONG_POLL_RECHECK_MS": envint("CONDUCTOR_LONG_POLL_RECHECK_MS", 50),
    # Most tasks one poll hands out; poll data (lastPollTime) is written at most once per
    # this many ms per (queue, domain, worker) and process.
    "POLL_MAX_TASKS": envint("CONDUCTOR_POLL_MAX_TASKS", 1000),
    "POLL_DATA_RESOLUTION_MS": envint("CONDUCTOR_POLL_DATA_RESOLUTION_MS", 1000),
    # An empty read of a queue answers this process's next polls of it without a read while
    # no task was queued on it (its own commits, PostgreSQL's LISTEN/NOTIFY, SQLite's WAL
    # index tell), for at most this many ms (what a lost wake-up could cost); 0 = off.
    "IDLE_QUEUE_KNOWLEDGE_MS": envint("CONDUCTOR_IDLE_QUEUE_KNOWLEDGE_MS", 5000),
    # Group commit of the fast path's task updates and starts (apps.engine.groupcommit):
    # concurrent calls share one transaction and one COMMIT, executed by this many persistent
    # committer threads (a workflow's updates always on the same one), at most
    # GROUP_COMMIT_MAX_OPS per transaction; GROUP_COMMIT_WINDOW_MS > 0 waits that long for
    # company before each batch (0: none, batches grow with the load). GROUP_COMMIT=off
    # runs each update in a pool thread in its own transaction; auto (the default): on
    # for SQLite, and for PostgreSQL while GROUP_COMMIT_FUSED is on (measured:
    # docs/performance.md).
    "GROUP_COMMIT": os.environ.get("CONDUCTOR_GROUP_COMMIT", "auto"),
    "GROUP_COMMIT_THREADS": envint("CONDUCTOR_GROUP_COMMIT_THREADS", 1),
    "GROUP_COMMIT_MAX_OPS": envint("CONDUCTOR_GROUP_COMMIT_MAX_OPS", 64),
    "GROUP_COMMIT_WINDOW_MS": envint("CONDUCTOR_GROUP_COMMIT_WINDOW_MS", 0),
    # Threads per committer taking turns: the next batch executes on another connection
    # while one commits. auto: 2 on PostgreSQL, 1 on SQLite (one writer)
    "GROUP_COMMIT_PIPELINE": os.environ.get("CONDUCTOR_GROUP_COMMIT_PIPELINE", "auto"),
    # PostgreSQL: a batch of several task updates runs fused (one lock statement, each
    # table's writes in one statement; apps.engine.store.fused). off: call by call
    "GROUP_COMMIT_FUSED": os.environ.get("CONDUCTOR_GROUP_COMMIT_FUSED", "on"),
    # A task refused by its TaskDef's rate or concurrency limit goes back to its queue,
    # hidden this long (ms) when no better time is known (apps.engine.limits).
    "TASK_LIMIT_POSTPONE_MS": envint("CONDUCTOR_TASK_LIMIT_POSTPONE_MS", 1000),
    # /metrics (apps.engine.metrics): counters count events older than METRICS_SETTLE_MS;
    # a fresh collector starts METRICS_LOOKBACK_SECONDS back; workflow owners (per
    # definition) are cached METRICS_OWNER_CACHE_SECONDS.
    "METRICS_SETTLE_MS": envint("CONDUCTOR_METRICS_SETTLE_MS", 5000),
    "METRICS_LOOKBACK_SECONDS": envint("CONDUCTOR_METRICS_LOOKBACK_SECONDS", 3600),
    "METRICS_OWNER_CACHE_SECONDS": envint("CONDUCTOR_METRICS_OWNER_CACHE_SECONDS", 60),
    # An API key is re-read from the database at most this often (s) per key and process.
    "API_KEY_CACHE_SECONDS": envfloat("CONDUCTOR_API_KEY_CACHE_SECONDS", 5.0),
    # A synchronous call (execute, signal) re-reads the database this often (s) for changes
    # made by other processes while it waits.
    "SYNC_WAIT_RECHECK_SECONDS": envfloat("CONDUCTOR_SYNC_WAIT_RECHECK_SECONDS", 0.1),
    # /health reports a cluster whose sweeper lease was not renewed for this long (s) stale.
    "HEALTH_CLUSTER_STALE_SECONDS": envint("CONDUCTOR_HEALTH_CLUSTER_STALE_SECONDS", 15),
    # A domain of taskToDomain counts as active when a worker polled it within this (ms;
    # Conductor's activeWorkerLastPollTimeout).
    "ACTIVE_WORKER_WINDOW_MS": envint("CONDUCTOR_ACTIVE_WORKER_WINDOW_MS", 10_000),
    # The sweeper claims a due execution for this long (ms) before deciding it: a sweeper
    # killed mid-batch delays the executions it had claimed by this much. A decide that
    # outlasts it is harmless (deciding takes the workflow's row lock).
    "SWEEPER_DECIDE_LEASE_MS": envint("CONDUCTOR_SWEEPER_DECIDE_LEASE_MS", 5_000),
    # Event messages: a claim holds a message this long (ms); claims before transient
    # failures are recorded FAILED; delay (ms, times attempts) before a message that failed
    # transiently is claimable again; the event sweep leaves younger messages (ms) to the
    # job enqueued for them.
    "EVENT_MESSAGE_LEASE_MS": envint("CONDUCTOR_EVENT_MESSAGE_LEASE_MS", 60_000),
    "EVENT_MESSAGE_MAX_ATTEMPTS": envint("CONDUCTOR_EVENT_MESSAGE_MAX_ATTEMPTS", 5),
    "EVENT_MESSAGE_RETRY_DELAY_MS": envint("CONDUCTOR_EVENT_MESSAGE_RETRY_DELAY_MS", 2_000),
    "EVENT_SWEEP_GRACE_MS": envint("CONDUCTOR_EVENT_SWEEP_GRACE_MS", 5_000),
    # A task output above this (KB) fails the task terminally (Conductor's hard limit).
    # the task output max (Conductor's maxTaskOutputPayloadSizeThreshold): one setting, read
    # by payloads.max_payload_bytes("TASK_OUTPUT") for the API and the engine alike
    "MAX_TASK_OUTPUT_PAYLOAD_KB": envint("CONDUCTOR_MAX_TASK_OUTPUT_PAYLOAD_SIZE_THRESHOLD_KB",
                                         envint("CONDUCTOR_MAX_TASK_OUTPUT_PAYLOAD_KB", 10240)),
    # API authentication (apps/api/auth.py): on unless CONDUCTOR_API_AUTH=off. `make run`
    # on a loopback address turns it off and says so.
    "API_AUTH": envbool("CONDUCTOR_API_AUTH", "on"),
    # Lifetime of a token from POST /api/token (s); the SDKs renew theirs every 45 minutes.
    "API_TOKEN_TTL_SECONDS": envint("CONDUCTOR_API_TOKEN_TTL_SECONDS", 3600),
    # Audit a worker's task results and log lines too (apps.api.audit; every other API
    # write is always audited).
    "AUDIT_WORKER_WRITES": envbool("CONDUCTOR_AUDIT_WORKER_WRITES", "off"),
    # What a definition may read of the process (docs/secrets.md): ``${workflow.env.X}``
    # reads the environment store and the process variable ``<prefix>X`` (Conductor's
    # conductor.environment.env.prefix); a bare ``${NAME}`` reads only NETFLIX_ENV,
    # NETFLIX_STACK and the process variables listed here (comma-separated).
    "ENV_PREFIX": os.environ.get("CONDUCTOR_ENV_PREFIX", "CONDUCTOR_ENV_"),
    "BARE_ENV_NAMES": [n.strip() for n in os.environ.get("CONDUCTOR_BARE_ENV_NAMES", "").split(",") if n.strip()],
    # Retention of terminal executions per status, e.g. "COMPLETED=30d,FAILED=90d"
    # (apps.engine.retention); empty keeps everything.
    "RETENTION": os.environ.get("CONDUCTOR_RETENTION", ""),
    # How often the cluster's retention job runs (minutes).
    "RETENTION_EVERY_MINUTES": envint("CONDUCTOR_RETENTION_EVERY_MINUTES", 10),
    # Executions removed per transaction, how long one retention job runs at most (s) and
    # its pause between two batches (s).
    "RETENTION_BATCH_EXECUTIONS": envint("CONDUCTOR_RETENTION_BATCH_EXECUTIONS", 200),
    "RETENTION_JOB_SECONDS": envfloat("CONDUCTOR_RETENTION_JOB_SECONDS", 20.0),
    "RETENTION_PAUSE_SECONDS": envfloat("CONDUCTOR_RETENTION_PAUSE_SECONDS", 0.05),
    # Execution history (apps.engine.history): events kept per execution before the oldest
    # detail is compacted (status transitions are always kept), the largest event (bytes),
    # and how often (about one save in N events) the cap is checked.
    "HISTORY_MAX_EVENTS": envint("CONDUCTOR_HISTORY_MAX_EVENTS", 5000),
    "HISTORY_EVENT_MAX_BYTES": envint("CONDUCTOR_HISTORY_EVENT_MAX_BYTES", 32768),
    "HISTORY_COMPACT_EVERY": envint("CONDUCTOR_HISTORY_COMPACT_EVERY", 64),
    # Longest wait of a synchronous call (execute's waitForSeconds, signal's timeoutMillis),
    # in seconds: below scripts/run.sh's STOP_TIMEOUT, so a stopping server never hangs on one.
    "MAX_SYNC_WAIT_SECONDS": float(os.environ.get("CONDUCTOR_MAX_SYNC_WAIT_SECONDS", "30")),
    # A DO_WHILE whose loopCondition still holds after this many iterations fails.
    "DO_WHILE_MAX_ITERATIONS": envint("CONDUCTOR_DO_WHILE_MAX_ITERATIONS", 1000),
    # A JSON_JQ_TRANSFORM program running longer than this (s) fails its task.
    "JQ_TIME_LIMIT_SECONDS": float(os.environ.get("CONDUCTOR_JQ_TIME_LIMIT_SECONDS", "5")),
    # Scripts and jq run outside the workflow's lock once the request's transaction ended;
    # one API call runs at most this many (an INLINE chain, a loop), the cluster the rest.
    "EVALUATIONS_PER_CALL": envint("CONDUCTOR_EVALUATIONS_PER_CALL", 500),
    # An evaluation asked for and still without a result this long (ms) past its time
    # limit (its process died, its request was dropped) is asked for again.
    "EVALUATION_REDISPATCH_GRACE_MS": envint("CONDUCTOR_EVALUATION_REDISPATCH_GRACE_MS", 15_000),
    # Request bodies nested deeper than this are refused (400) before anything walks them.
    "MAX_JSON_DEPTH": envint("CONDUCTOR_MAX_JSON_DEPTH", 64),
    # One task log line (POST /api/tasks/{id}/log) above this many bytes answers 413.
    "MAX_TASK_LOG_BYTES": envint("CONDUCTOR_MAX_TASK_LOG_BYTES", 64 * 1024),
    # Workflow scheduler (fires from the sweeper loop, within SWEEPER_TICK_MS of a slot):
    # the zone of /nextFewSchedules and the execution records kept per schedule.
    "SCHEDULER_TIME_ZONE": os.environ.get("CONDUCTOR_SCHEDULER_TIME_ZONE", "UTC"),
    "SCHEDULER_EXECUTION_RECORDS_KEPT": envint("CONDUCTOR_SCHEDULER_EXECUTION_RECORDS_KEPT", 100),
    # the most slots one backfill starts (apps.scheduler.backfill)
    "SCHEDULER_BACKFILL_MAX_SLOTS": envint("CONDUCTOR_SCHEDULER_BACKFILL_MAX_SLOTS", 100),
    # Alert rules (apps.alerts, docs/alerts.md): how often a rule is evaluated, the most
    # definitions/queues one "every definition" rule looks at, webhook timeout, attempts
    "ALERTS_EVALUATE_SECONDS": float(os.environ.get("CONDUCTOR_ALERTS_EVALUATE_SECONDS", "15")),
    "ALERTS_MAX_SUBJECTS": envint("CONDUCTOR_ALERTS_MAX_SUBJECTS", 500),
    "ALERTS_WEBHOOK_TIMEOUT_SECONDS": float(os.environ.get("CONDUCTOR_ALERTS_WEBHOOK_TIMEOUT_SECONDS", "5")),
    "ALERTS_MAX_ATTEMPTS": envint("CONDUCTOR_ALERTS_MAX_ATTEMPTS", 5),
    "ALERTS_RETRY_DELAY_MS": envint("CONDUCTOR_ALERTS_RETRY_DELAY_MS", 5000),
    "ALERTS_TICK_MS": envint("CONDUCTOR_ALERTS_TICK_MS", 1000),
    "ALERTS_DELIVERY_LEASE_MS": envint("CONDUCTOR_ALERTS_DELIVERY_LEASE_MS", 60_000),
    # Status listeners (apps.listeners.config): Conductor's listener types, comma-separated
    # (workflow_publisher, queue_publisher, archive), and task_publisher for tasks.
    "WORKFLOW_STATUS_LISTENER": os.environ.get("CONDUCTOR_WORKFLOW_STATUS_LISTENER", ""),
    "TASK_STATUS_LISTENER": os.environ.get("CONDUCTOR_TASK_STATUS_LISTENER", ""),
    "STATUS_NOTIFIER_URL": os.environ.get("CONDUCTOR_STATUS_NOTIFIER_URL", ""),
    "STATUS_NOTIFIER_ENDPOINT_WORKFLOW": os.environ.get("CONDUCTOR_STATUS_NOTIFIER_ENDPOINT_WORKFLOW", ""),
    "STATUS_NOTIFIER_ENDPOINT_TASK": os.environ.get("CONDUCTOR_STATUS_NOTIFIER_ENDPOINT_TASK", ""),
    "STATUS_NOTIFIER_SUBSCRIBED_WORKFLOW_STATUSES": os.environ.get(
        "CONDUCTOR_STATUS_NOTIFIER_SUBSCRIBED_WORKFLOW_STATUSES", "COMPLETED,TERMINATED"),
    "STATUS_NOTIFIER_SUBSCRIBED_TASK_STATUSES": os.environ.get("CONDUCTOR_STATUS_NOTIFIER_SUBSCRIBED_TASK_STATUSES", ""),
    "STATUS_NOTIFIER_HEADER_PREFER": os.environ.get("CONDUCTOR_STATUS_NOTIFIER_HEADER_PREFER", ""),
    "STATUS_NOTIFIER_HEADER_PREFER_VALUE": os.environ.get("CONDUCTOR_STATUS_NOTIFIER_HEADER_PREFER_VALUE", ""),
    "STATUS_NOTIFIER_TIMEOUT_MS": envint("CONDUCTOR_STATUS_NOTIFIER_TIMEOUT_MS", 2000),
    "STATUS_NOTIFIER_MAX_ATTEMPTS": envint("CONDUCTOR_STATUS_NOTIFIER_MAX_ATTEMPTS", 10),
    "STATUS_NOTIFIER_RETRY_DELAY_MS": envint("CONDUCTOR_STATUS_NOTIFIER_RETRY_DELAY_MS", 1000),
    "QUEUE_PUBLISHER_SUCCESS_QUEUE": os.environ.get("CONDUCTOR_QUEUE_PUBLISHER_SUCCESS_QUEUE", "_callbackSuccessQueue"),
    "QUEUE_PUBLISHER_FAILURE_QUEUE": os.environ.get("CONDUCTOR_QUEUE_PUBLISHER_FAILURE_QUEUE", "_callbackFailureQueue"),
    "QUEUE_PUBLISHER_FINALIZE_QUEUE": os.environ.get("CONDUCTOR_QUEUE_PUBLISHER_FINALIZE_QUEUE",
                                                     "_callbackFinalizeQueue"),
    "ARCHIVE_DELAY_SECONDS": envint("CONDUCTOR_ARCHIVE_DELAY_SECONDS", 60),
    # Listener deliveries (apps.listeners.delivery): one delivery job holds its lease (ms)
    # and runs at most LISTENER_DELIVERY_JOB_SECONDS; a failed delivery's retry delay
    # doubles per attempt up to LISTENER_MAX_RETRY_DELAY_MS.
    "LISTENER_DELIVERY_LEASE_MS": envint("CONDUCTOR_LISTENER_DELIVERY_LEASE_MS", 30_000),
    "LISTENER_DELIVERY_JOB_SECONDS": envint("CONDUCTOR_LISTENER_DELIVERY_JOB_SECONDS", 20),
    "LISTENER_MAX_RETRY_DELAY_MS": envint("CONDUCTOR_LISTENER_MAX_RETRY_DELAY_MS", 300_000),
    # Event queues on brokers (apps.brokers, docs/events.md): a broker is on when its
    # setting is set (amqp://user:pass@host:5672/vhost; nats://host:4222; host:9092,...).
    "AMQP_URL": os.environ.get("CONDUCTOR_AMQP_URL", ""),
    "NATS_URL": os.environ.get("CONDUCTOR_NATS_URL", ""),
    "KAFKA_BOOTSTRAP_SERVERS": os.environ.get("CONDUCTOR_KAFKA_BOOTSTRAP_SERVERS", ""),
    # the consumer group of event-handler consumers (AMQP queue users, NATS queue group and
    # JetStream durable, Kafka group.id), shared by every cluster
    "EVENT_CONSUMER_GROUP": os.environ.get("CONDUCTOR_EVENT_CONSUMER_GROUP", "conductor"),
    # one broker call (connect, publish ack) waits at most this long (ms)
    "BROKER_TIMEOUT_MS": envint("CONDUCTOR_BROKER_TIMEOUT_MS", 5_000),
    "BROKER_RETRY_DELAY_MS": envint("CONDUCTOR_BROKER_RETRY_DELAY_MS", 1_000),
    "BROKER_MAX_RETRY_DELAY_MS": envint("CONDUCTOR_BROKER_MAX_RETRY_DELAY_MS", 30_000),
    "BROKER_DELIVERY_LEASE_MS": envint("CONDUCTOR_BROKER_DELIVERY_LEASE_MS", 30_000),
    "BROKER_DELIVERY_JOB_SECONDS": envint("CONDUCTOR_BROKER_DELIVERY_JOB_SECONDS", 20),
    "BROKER_CONSUMER_LEASE_MS": envint("CONDUCTOR_BROKER_CONSUMER_LEASE_MS", 15_000),
    "BROKER_HANDLER_REFRESH_SECONDS": envint("CONDUCTOR_BROKER_HANDLER_REFRESH_SECONDS", 5),
    "BROKER_FETCH_MAX": envint("CONDUCTOR_BROKER_FETCH_MAX", 20),
    # the Kafka workflow status listener (WORKFLOW_STATUS_LISTENER=kafka): Conductor's
    # defaultTopic and eventTopics ("COMPLETED=done-topic,TERMINATED=failed-topic")
    "KAFKA_STATUS_DEFAULT_TOPIC": os.environ.get("CONDUCTOR_KAFKA_STATUS_DEFAULT_TOPIC", "workflow-status-events"),
    "KAFKA_STATUS_EVENT_TOPICS": os.environ.get("CONDUCTOR_KAFKA_STATUS_EVENT_TOPICS", ""),
}

# --- AI and agent tasks (apps.ai) ----------------------------------------------------
# LLM providers by ``llmProvider`` name. ``openai`` (any OpenAI-compatible endpoint) is
# enabled when its API key or base URL is set, ``ollama`` when its base URL is set.
# More OpenAI-compatible or Ollama endpoints: CONDUCTOR_AI_PROVIDERS="name=openai,other=ollama"
# with CONDUCTOR_AI_<NAME>_BASE_URL / CONDUCTOR_AI_<NAME>_API_KEY. Keys stay here: they are
# never written to a task's input or output.
# The vendors' public endpoints, used when a provider of that name has a key and no base URL.
_AI_DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com",
                         "gemini": "https://generativelanguage.googleapis.com", "mistral": "https://api.mistral.ai"}


def _ai_providers() -> dict:
    """``{name: {kind, base_url, api_key[, api_version][, region]}}`` of the configured LLM
    providers: one per kind under its own name (Conductor's integration names) plus the
    ``CONDUCTOR_AI_PROVIDERS`` list, each configured by ``CONDUCTOR_AI_<NAME>_BASE_URL`` /
    ``_API_KEY`` (``_API_VERSION`` for azureopenai, ``_REGION`` for aws_bedrock)."""
    kinds = {k: k for k in ("openai", "ollama", "anthropic", "gemini", "azureopenai", "aws_bedrock", "mistral")}
    for item in os.environ.get("CONDUCTOR_AI_PROVIDERS", "").split(","):
        name, _, kind = item.strip().partition("=")
        if name:
            kinds[name.strip()] = (kind.strip() or "openai").lower()
    providers = {}
    for name, kind in kinds.items():
        prefix = "CONDUCTOR_AI_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()
        base_url = os.environ.get(prefix + "_BASE_URL", "").strip()
        api_key = os.environ.get(prefix + "_API_KEY", "").strip()
        region = os.environ.get(prefix + "_REGION", "").strip() or "us-east-1"
        if api_key and not base_url:
            base_url = _AI_DEFAULT_BASE_URLS.get(name, "")
            if name == "aws_bedrock":
                base_url = f"https://bedrock-runtime.{region}.amazonaws.com"
        if base_url:
            providers[name] = {"kind": kind, "base_url": base_url, "api_key": api_key, "region": region,
                               "api_version": os.environ.get(prefix + "_API_VERSION", "").strip() or None}
    return providers


CONDUCTOR_AI = {
    "PROVIDERS": _ai_providers(),
    # Origins (scheme://host[:port]) MCP servers may be called at; none by default.
    # Provider base URLs above are allowed because the operator configured them.
    "ALLOWED_ORIGINS": [o.strip().rstrip("/") for o in os.environ.get("CONDUCTOR_AI_ALLOWED_ORIGINS", "").split(",")
                        if o.strip()],
    # One provider or MCP call (s); below the cluster's job timeout (Q_CLUSTER["timeout"]).
    "TIMEOUT_SECONDS": envint("CONDUCTOR_AI_TIMEOUT_SECONDS", 45),
}

# The workflow message queue (apps.wmq; Conductor's conductor.workflow-message-queue.*):
# messages one workflow's queue holds, messages one PULL_WORKFLOW_MESSAGES takes at most,
# and the seconds after its last push at which a queue is dropped whole.
CONDUCTOR_WMQ = {
    "MAX_QUEUE_SIZE": envint("CONDUCTOR_WMQ_MAX_QUEUE_SIZE", 1000),
    "MAX_BATCH_SIZE": envint("CONDUCTOR_WMQ_MAX_BATCH_SIZE", 100),
    "TTL_SECONDS": envint("CONDUCTOR_WMQ_TTL_SECONDS", 86400),
}

# A2A (apps.a2a; Conductor's conductor.a2a.*): which workflows are served as agents
# (all, these names, or those whose WorkflowDef metadata has "a2a.enabled": true), the
# public URL their cards name, and the message/stream poll and window; for the AGENT tasks,
# where remote agents call back (push mode) and whether agent URLs may be on loopback or
# private addresses (off: the SSRF guard refuses them).
CONDUCTOR_A2A = {
    "EXPOSE_ALL": envbool("CONDUCTOR_A2A_SERVER_EXPOSE_ALL"),
    "EXPOSED_WORKFLOWS": [n.strip() for n in os.environ.get("CONDUCTOR_A2A_SERVER_EXPOSED_WORKFLOWS", "").split(",")
                          if n.strip()],
    "PUBLIC_URL": os.environ.get("CONDUCTOR_A2A_SERVER_PUBLIC_URL", "").strip(),
    "PROVIDER_ORGANIZATION": "Conductor",
    "STREAM_POLL_INTERVAL_MS": envint("CONDUCTOR_A2A_STREAM_POLL_INTERVAL_MS", 500),
    "STREAM_MAX_DURATION_SECONDS": envint("CONDUCTOR_A2A_STREAM_MAX_DURATION_SECONDS", 300),
    "CALLBACK_URL": os.environ.get("CONDUCTOR_A2A_CALLBACK_URL", "").strip(),
    "ALLOW_PRIVATE_NETWORK": envbool("CONDUCTOR_A2A_ALLOW_PRIVATE_NETWORK"),
}

# Any API request body above this many bytes answers 413 (the fast path included). Above
# the task output limit, so an oversize output still fails its task with Conductor's reason.
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("CONDUCTOR_MAX_REQUEST_BODY_BYTES", 16 * 1024 * 1024)

# LOG_FORMAT=json: one JSON object per line with workflowId/taskId/taskType/workerId
# (apps.core.logs); default: plain text lines.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "apps.core.logs.ContextFilter"},
                "no_traceback": {"()": "apps.core.logs.NoTraceback"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
                   "json": {"()": "apps.core.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["context"],
                             "formatter": "json" if os.environ.get("LOG_FORMAT", "").lower() == "json" else "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        "apps": {"level": os.environ.get("APP_LOG_LEVEL", "INFO"), "propagate": True},
        "django.request": {"level": "ERROR"},
        # a Host header not in ALLOWED_HOSTS: 400 and one line, not a traceback
        "django.security.DisallowedHost": {"level": "ERROR", "filters": ["no_traceback"]},
    },
}

# --- ui ------------------------------------------------------------------------------
# Operator pages (apps/ui). Sign-in is Django's own; the first user comes from
# `manage.py createsuperuser`.
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/executions/"
LOGOUT_REDIRECT_URL = "/login/"
CONDUCTOR_UI = {
    # Payloads (input/output/variables/JSON) longer than this many characters are shown
    # truncated, with a link to download them whole.
    "PAYLOAD_PREVIEW_CHARS": envint("UI_PAYLOAD_PREVIEW_CHARS", 20_000),
    # How often a live consumer re-reads an execution's change markers (seconds).
    "LIVE_POLL_SECONDS": float(os.environ.get("UI_LIVE_POLL_SECONDS", "0.5")),
    # A queue with tasks but no poll for this long is flagged (seconds).
    "QUEUE_STALE_POLL_SECONDS": envint("UI_QUEUE_STALE_POLL_SECONDS", 60),
    # Workers that polled within this window are listed on /queues/ (seconds).
    "QUEUE_RECENT_POLL_SECONDS": envint("UI_QUEUE_RECENT_POLL_SECONDS", 3600),
    # Dynamic forks wider than this are drawn as one summary node.
    "GRAPH_DYNAMIC_EXPAND_LIMIT": envint("UI_GRAPH_DYNAMIC_EXPAND_LIMIT", 40),
}
# The Overview's counts (apps/overview): rows one counter is spread over (one per process
# slot, so two processes' writes rarely wait for one row lock), seconds between two writes
# of a process's counts, and how long minute and hour rows are kept.
CONDUCTOR_OVERVIEW = {
    "ROLLUP_SLOTS": envint("OVERVIEW_ROLLUP_SLOTS", 4),
    "FLUSH_SECONDS": float(os.environ.get("OVERVIEW_FLUSH_SECONDS") or 1.0),
    "MINUTE_KEEP_HOURS": envint("OVERVIEW_MINUTE_KEEP_HOURS", 48),
    "HOUR_KEEP_DAYS": envint("OVERVIEW_HOUR_KEEP_DAYS", 90),
}

# --- external payload storage (apps/engine/payloads.py; Conductor's ConductorProperties) ---------
# Sizes in KB of the JSON a payload serialises to. A payload above its max threshold is refused
# (a task: FAILED_WITH_TERMINAL_ERROR; an upload: 413). Conductor's defaults.
CONDUCTOR_PAYLOAD_THRESHOLDS_KB = {
    "WORKFLOW_INPUT": (envint("CONDUCTOR_WORKFLOW_INPUT_PAYLOAD_SIZE_THRESHOLD_KB", 5120),
                       envint("CONDUCTOR_MAX_WORKFLOW_INPUT_PAYLOAD_SIZE_THRESHOLD_KB", 10240)),
    "WORKFLOW_OUTPUT": (envint("CONDUCTOR_WORKFLOW_OUTPUT_PAYLOAD_SIZE_THRESHOLD_KB", 5120),
                        envint("CONDUCTOR_MAX_WORKFLOW_OUTPUT_PAYLOAD_SIZE_THRESHOLD_KB", 10240)),
    "TASK_INPUT": (envint("CONDUCTOR_TASK_INPUT_PAYLOAD_SIZE_THRESHOLD_KB", 3072),
                   envint("CONDUCTOR_MAX_TASK_INPUT_PAYLOAD_SIZE_THRESHOLD_KB", 10240)),
    "TASK_OUTPUT": (envint("CONDUCTOR_TASK_OUTPUT_PAYLOAD_SIZE_THRESHOLD_KB", 3072),
                    None),  # the max: CONDUCTOR["MAX_TASK_OUTPUT_PAYLOAD_KB"]
}
# How long a signed upload/download URI of GET /api/{workflow,tasks}/externalstoragelocation
# stays valid (seconds; Conductor's S3 storage: conductor.external-payload-storage.s3.signedUrlExpirationDuration)
CONDUCTOR_PAYLOAD_URI_TTL_SECONDS = envint("CONDUCTOR_PAYLOAD_URI_TTL_SECONDS", 300)

# --- file storage between tasks (apps/files; Conductor's conductor.file-storage.*) ---------------
# /api/files: files that belong to a workflow execution, passed between tasks as
# conductor://file/<id> handles; content goes through signed URLs of this server
# (docs/files.md). A file is removed with its execution (retention, DELETE .../remove).
CONDUCTOR_FILES = {
    # Where the local-directory store keeps content (Conductor: ...conductor.directory).
    "DIR": Path(os.environ.get("CONDUCTOR_FILES_DIR") or VAR_DIR / "files"),
    # Largest file accepted, in bytes (Conductor: ...conductor.max-size, 100 MiB); a larger
    # upload (or multipart total) answers 413.
    "MAX_BYTES": envint("CONDUCTOR_FILES_MAX_BYTES", 100 * 1024 * 1024),
    # How long an upload or download URL stays valid (s; Conductor: signed-url-expiration, 60 s).
    "URL_TTL_SECONDS": envint("CONDUCTOR_FILES_URL_TTL_SECONDS", 60),
    # The origin put in front of /api/files/content/... in the URLs handed out, e.g.
    # https://conductor.example.com (Conductor: ...conductor.base-url). Empty: the origin the
    # calling client reached (its Host). The signature never covers the origin.
    "BASE_URL": os.environ.get("CONDUCTOR_FILES_BASE_URL", "").rstrip("/"),
    # "id:secret,id2:secret2": the first key signs, every key verifies (rotation). Empty: one
    # key derived from SECRET_KEY, id "s1".
    "SIGNING_KEYS": os.environ.get("CONDUCTOR_FILES_SIGNING_KEYS", ""),
    # The content store: a class of apps.files.storage's FileStore interface.
    "STORE": os.environ.get("CONDUCTOR_FILES_STORE", "apps.files.storage.LocalDirectoryStore"),
}
# E-mail of alert notifications (docs/alerts.md): Django's mail settings from the environment
EMAIL_BACKEND = os.environ.get("CONDUCTOR_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = os.environ.get("CONDUCTOR_EMAIL_HOST", "localhost")
EMAIL_PORT = envint("CONDUCTOR_EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("CONDUCTOR_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("CONDUCTOR_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = os.environ.get("CONDUCTOR_EMAIL_USE_TLS", "").lower() in ("1", "true", "yes", "on")
EMAIL_TIMEOUT = envint("CONDUCTOR_EMAIL_TIMEOUT", 10)
if os.environ.get("CONDUCTOR_EMAIL_FILE_PATH"):
    EMAIL_FILE_PATH = os.environ["CONDUCTOR_EMAIL_FILE_PATH"]
DEFAULT_FROM_EMAIL = os.environ.get("CONDUCTOR_EMAIL_FROM", "conductor-web@localhost")
