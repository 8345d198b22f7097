"""CommHub settings: one module, read from the environment.

The defaults give a laptop install that needs nothing else (SQLite in WAL mode, the in-memory
channel layer). Production is switched on by DATABASE_URL / REDIS_URL. A bad value stops the
process at start-up with a message naming the variable.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import tempfile
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from limits.storage import SCHEMES as RATE_LIMIT_STORAGE_SCHEMES

from hub_tasks.limits import TTL_MAX  # a plain module of constants: safe to import before the apps

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()


def _int_setting(name: str, default: int, *, minimum: int) -> int:
    raw = env.str(name, default=str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number of seconds, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def _dev_secret_key() -> str:
    # A generated key kept beside the project, so logins survive a restart of `make run`.
    path = BASE_DIR / ".secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        key = secrets.token_urlsafe(50)
        path.write_text(key)
        path.chmod(0o600)
        return key


# "production": served over HTTPS (directly or behind a TLS proxy), with its secret and host names
# given explicitly; `manage.py check --deploy` passes. "dev" (default): a laptop, plain HTTP.
COMMHUB_PROFILE = env.str("COMMHUB_PROFILE", default="dev")
if COMMHUB_PROFILE not in ("dev", "production"):
    raise ImproperlyConfigured(f'COMMHUB_PROFILE must be "dev" or "production", got {COMMHUB_PROFILE!r}')
PRODUCTION = COMMHUB_PROFILE == "production"

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="") or ("" if PRODUCTION else _dev_secret_key())
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[] if PRODUCTION else ["127.0.0.1", "localhost", "[::1]"])
if PRODUCTION:
    for problem, wrong in [
        ("DEBUG must be off", DEBUG),
        ("SECRET_KEY must be set (every process and host needs the same one)", not SECRET_KEY),
        ("ALLOWED_HOSTS must name the host names the hub is served under", not ALLOWED_HOSTS),
    ]:
        if wrong:
            raise ImproperlyConfigured(f"COMMHUB_PROFILE=production: {problem}.")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    # Bottom to top (pyproject.toml [tool.importlinter] holds the layers to this order).
    "hub_core",
    "hub_agents",
    "hub_tasks",
    "hub_events",
    "hub_channels",
    "hub_fleet",
    "hub_search",
    "hub_webhooks",
    "hub_approvals",
    "hub_schedules",
    "hub_tools",
    "hub_api",
    "hub_mcp",
    "hub_live",
    "hub_dashboard",
]

LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:fleet"
LOGOUT_REDIRECT_URL = "dashboard:login"

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "commhub.security.content_security_policy",
    "commhub.static.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "commhub.urls"
WSGI_APPLICATION = "commhub.wsgi.application"
ASGI_APPLICATION = "commhub.asgi.application"

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
            ],
        },
    },
]

_database_url = env.str("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
if _database_url.split("://", 1)[0] not in environ.Env.DB_SCHEMES:
    raise ImproperlyConfigured(
        f"DATABASE_URL is not a usable database URL: scheme must be one of postgres://, sqlite:///, ... "
        f"(got {_database_url.split('://', 1)[0]!r})"
    )
DATABASES = {"default": environ.Env.db_url_config(_database_url)}

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock at BEGIN, so
            # two transactions never both read and then fail to upgrade ("database is locked").
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )
    # Tests use a file, not :memory:, so that threads racing in tests share one database; one file
    # per process, so that two test runs on one machine never share it.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = str(
        Path(tempfile.gettempdir()) / f"commhub-test-{os.getpid()}.sqlite3"
    )
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Under ASGI a request may run on a thread of its own, and persistent connections are kept per
    # thread: they would pile up past PostgreSQL's max_connections. A pool per process bounds them
    # (COMMHUB_DB_POOL_SIZE times processes within max_connections); a request waits for a free connection.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 2,
        "max_size": _int_setting("COMMHUB_DB_POOL_SIZE", 20, minimum=2),
        "timeout": 10,
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # Redis Pub/Sub: the layer carries only doorbell rings (hub_core.doorbell), which may be
            # lost at no cost, so at-most-once delivery is all it needs. Its receive waits on a
            # local queue: a waiter that gives up (a long-poll reporting progress each second)
            # cancels nothing in Redis. (The list-based RedisChannelLayer's receive blocks in
            # BZPOPMIN; cancelling it resets the shared connection, and fifty waiters doing so each
            # second stalled every one of them.)
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# Agents that have not reported for this long read as "offline" everywhere.
COMMHUB_OFFLINE_AFTER_SECONDS = _int_setting("COMMHUB_OFFLINE_AFTER_SECONDS", 600, minimum=1)
# A command sent to a node (node_command) that the node has not acknowledged this long is expired
# by the sweep.
COMMHUB_NODE_COMMAND_ACK_SECONDS = _int_setting("COMMHUB_NODE_COMMAND_ACK_SECONDS", 60, minimum=1)
# Open streams (SSE, the dashboard socket) re-check their caller this often, whatever their traffic:
# a revoked token, a removed member or a logged-out session loses its stream within this time.
COMMHUB_STREAM_RECHECK_SECONDS = _int_setting("COMMHUB_STREAM_RECHECK_SECONDS", 15, minimum=1)
# A long-poll answered over SSE on /mcp (the client sent a progressToken) reports progress this
# often: clients that reset their timeout on progress then outlast a wait longer than that timeout.
COMMHUB_LONG_POLL_PROGRESS_SECONDS = _int_setting("COMMHUB_LONG_POLL_PROGRESS_SECONDS", 5, minimum=1)
# How long a process may reuse what a token stands for (its networks and roles) before reading the
# token again. A change of access (a token revoked, a role changed, a member removed, a user
# deactivated) reaches every process sooner, within a second, through the generation they share
# (hub_agents/actor_cache.py); this bounds the reuse should that fail. 0: every request reads its token.
COMMHUB_ACTOR_CACHE_SECONDS = _int_setting("COMMHUB_ACTOR_CACHE_SECONDS", 60, minimum=0)
# PostgreSQL: connections per process of the fast lane's pool (commhub.hot: get_inbox on the event
# loop, one prepared statement); 0 turns the lane off (every call takes commhub.lean's path).
COMMHUB_HOT_POOL_SIZE = _int_setting("COMMHUB_HOT_POOL_SIZE", 4, minimum=0)
# send_task's default ttl_seconds when the caller gives none (the contract caps it at TTL_MAX, 86400).
COMMHUB_DEFAULT_TTL_SECONDS = _int_setting("COMMHUB_DEFAULT_TTL_SECONDS", 3600, minimum=1)
if COMMHUB_DEFAULT_TTL_SECONDS > TTL_MAX:
    raise ImproperlyConfigured(f"COMMHUB_DEFAULT_TTL_SECONDS must be at most {TTL_MAX} (the contract's maximum TTL)")

# How long the event log keeps events for reconnecting clients (Last-Event-ID) to catch up.
COMMHUB_EVENT_RETENTION_SECONDS = _int_setting("COMMHUB_EVENT_RETENTION_SECONDS", 7 * 86400, minimum=60)
# Outbound webhooks may reach loopback, private, link-local and other non-public addresses only when
# this is true (a trusted network, the tests): otherwise a subscription could probe the hub's own LAN.
COMMHUB_WEBHOOKS_ALLOW_PRIVATE = env.bool("COMMHUB_WEBHOOKS_ALLOW_PRIVATE", default=False)

# Largest request body /mcp and the API accept (a clear 413 beyond it).
COMMHUB_MAX_REQUEST_BYTES = _int_setting("COMMHUB_MAX_REQUEST_BYTES", 1_048_576, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = COMMHUB_MAX_REQUEST_BYTES
# Browser origins allowed to call /mcp besides those on ALLOWED_HOSTS (e.g. an MCP Inspector page).
COMMHUB_ALLOWED_ORIGINS = env.list("COMMHUB_ALLOWED_ORIGINS", default=[])

# Writes (every tool that changes something) a token may make, in the `limits` notation
# ("600/minute", "20/second"); "off" turns the limit off. Counted in Redis when REDIS_URL is set,
# so every process shares one count, else in the process.
COMMHUB_WRITE_RATE_LIMIT = env.str("COMMHUB_WRITE_RATE_LIMIT", default="600/minute")
_RATE = r"[1-9][0-9]*/(second|minute|hour|day)"
if COMMHUB_WRITE_RATE_LIMIT != "off" and not re.fullmatch(_RATE, COMMHUB_WRITE_RATE_LIMIT):
    raise ImproperlyConfigured(
        'COMMHUB_WRITE_RATE_LIMIT must read like "600/minute" (a positive count per second, minute, hour or day)'
        f' or be "off", got {COMMHUB_WRITE_RATE_LIMIT!r}'
    )
COMMHUB_RATE_LIMIT_STORAGE = env.str("COMMHUB_RATE_LIMIT_STORAGE", default=REDIS_URL or "memory://")
if COMMHUB_RATE_LIMIT_STORAGE.partition("://")[0] not in RATE_LIMIT_STORAGE_SCHEMES:
    raise ImproperlyConfigured(
        f"COMMHUB_RATE_LIMIT_STORAGE must be a storage URI of the limits library (memory://, redis://…),"
        f" got {COMMHUB_RATE_LIMIT_STORAGE!r}"
    )
# Names this hub's counters in a shared Redis, apart from other hubs (or test runs) using it.
COMMHUB_RATE_LIMIT_PREFIX = env.str("COMMHUB_RATE_LIMIT_PREFIX", default="commhub")

# GET /metrics (commhub.metrics): set, a scraper must send "Authorization: Bearer <this>"; unset, only
# clients on this machine (loopback, not through a proxy) are answered.
COMMHUB_METRICS_TOKEN = env.str("COMMHUB_METRICS_TOKEN", default="")
# Set, prometheus_client keeps every process's metrics in files there (commhub.metrics adds them up):
# it must name a directory, or the files land wherever the process runs (an empty value: its cwd).
_metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _metrics_dir is not None and not (_metrics_dir and os.path.isdir(_metrics_dir)):
    raise ImproperlyConfigured(
        "PROMETHEUS_MULTIPROC_DIR must name an existing directory that every hub process can write,"
        f" got {_metrics_dir!r} (unset it for one process's own metrics)"
    )


def _failure_limit(name: str, default: str) -> str:
    value = env.str(name, default=default)
    if value != "off" and not re.fullmatch(r"[1-9][0-9]*/([1-9][0-9]*)?(second|minute|hour|day)", value):
        raise ImproperlyConfigured(
            f'{name} must read like "10/15minute" (a positive count per [n] seconds, minutes, hours or days)'
            f' or be "off", got {value!r}'
        )
    return value


# Failed logins (dashboard, admin: anything that calls authenticate()) allowed per username and per
# client address within a moving window; past either, even the right password is refused until the
# window frees a slot. Counted in the same storage as the write limits.
COMMHUB_LOGIN_FAILURE_LIMIT = _failure_limit("COMMHUB_LOGIN_FAILURE_LIMIT", "10/15minute")
COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT = _failure_limit("COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT", "20/15minute")
AUTHENTICATION_BACKENDS = ["commhub.login_guard.GuardedModelBackend"]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Bearer first: an unauthenticated call then answers 401 with a Bearer challenge.
        "hub_api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["hub_api.auth.HasActor"],
    "DEFAULT_PARSER_CLASSES": ["hub_api.parsers.JSONObjectParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # \u-escape non-ASCII: a client's stray surrogate echoed in an error can never break encoding.
    "UNICODE_JSON": False,
    "EXCEPTION_HANDLER": "hub_api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "CommHub API",
    "DESCRIPTION": (
        "The CommHub tools (the contract's 17, then the hub's own) over plain HTTP: the same arguments "
        "and result objects as the MCP "
        "endpoint at /mcp. Authenticate with `Authorization: Bearer <ntok_…|utok_…>`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Enums stay inline (no shared components), so each can say whether null is allowed.
    "POSTPROCESSING_HOOKS": [
        "hub_api.endpoints.require_request_bodies",
        "hub_api.endpoints.link_operations",
    ],
}

# Headers every response carries; cookies are Secure and HSTS is on under the production profile.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
if PRODUCTION:
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env.bool("COMMHUB_SSL_REDIRECT", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
    SECURE_HSTS_SECONDS = _int_setting("COMMHUB_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("COMMHUB_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("COMMHUB_HSTS_PRELOAD", default=False)
    if not SECURE_HSTS_PRELOAD:
        # Joining browsers' preload list is hard to undo: the domain owner's decision, not a default.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    if env.bool("COMMHUB_BEHIND_TLS_PROXY", default=False):
        # Only behind a proxy that sets this header itself: a client could otherwise claim HTTPS.
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# "text": plain lines; "json": one JSON object a line, with the request id, the caller and the
# network of the request it was logged in (commhub.logs). Tokens are redacted either way.
COMMHUB_LOG_FORMAT = env.str("COMMHUB_LOG_FORMAT", default="text")
if COMMHUB_LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f'COMMHUB_LOG_FORMAT must be "text" or "json", got {COMMHUB_LOG_FORMAT!r}')
if COMMHUB_LOG_FORMAT == "json":
    logging.captureWarnings(True)  # a Python warning is a JSON line too (logger py.warnings), not bare stderr

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact_tokens": {"()": "commhub.security.RedactTokens"}},
    "formatters": {"json": {"()": "commhub.logs.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["redact_tokens"],
            **({"formatter": "json"} if COMMHUB_LOG_FORMAT == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # httpx logs every request's whole URL at INFO: a webhook's URL may carry a secret in its path.
    "loggers": {"httpx": {"level": "WARNING"}},
}
