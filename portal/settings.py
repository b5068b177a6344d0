"""DRA Portal settings: one module, driven by the environment (see docs/configuration.md).

With nothing set the portal runs for a newcomer: SQLite under ``var/``, Celery tasks executed
in-process, DEBUG on and a secret key generated once and kept in ``var/secret_key``.
``DATABASE_URL`` and ``REDIS_URL`` switch to the production path (PostgreSQL, Redis, Celery
workers). With ``DEBUG=False`` the portal refuses to start unless ``SECRET_KEY``,
``ALLOWED_HOSTS``, ``DATABASE_URL`` and ``REDIS_URL`` are all set.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from portal.durations import DurationError, parse_duration
from portal.environment import env_bool, env_int, env_list, env_secret, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PORTAL_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", default=True)

SECRET_KEY = env_secret("SECRET_KEY")
DATABASE_URL = env_secret("DATABASE_URL")
REDIS_URL = env_secret("REDIS_URL")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])


def _missing_production_settings() -> list[str]:
    missing = [] if SECRET_KEY else ["SECRET_KEY"]
    if "ALLOWED_HOSTS" not in os.environ or not ALLOWED_HOSTS:
        missing.append("ALLOWED_HOSTS")
    if not DATABASE_URL:
        missing.append("DATABASE_URL")
    if not REDIS_URL:
        missing.append("REDIS_URL")
    return missing


if not DEBUG:
    missing = _missing_production_settings()
    if missing:
        raise ImproperlyConfigured(
            "DEBUG is off, so the portal runs in production mode and needs "
            + ", ".join(missing)
            + " (each may also be given as <NAME>_FILE). See docs/configuration.md."
        )
elif not SECRET_KEY:
    # A local key, generated on first start and reused so sessions survive restarts.
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "template_partials",
    "django_htmx",
    "django_filters",
    "django_tables2",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "portal",
    "devices",
    "claims",
    "mirror",
    "notifications",
    "home",
]

# Outermost first. The first three are operations' (request id, timing, probes) and stay in
# front of everything: see portal/middleware.py for why; ServiceUnavailableMiddleware stays last.
MIDDLEWARE = [
    "portal.middleware.RequestIdMiddleware",
    "portal.middleware.RequestTimingMiddleware",
    "portal.middleware.ProbeMiddleware",
    "portal.middleware.ApiErrorFormatMiddleware",
    "portal.middleware.RequestLimitsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "portal.middleware.ServiceUnavailableMiddleware",
]

ROOT_URLCONF = "home.urls"
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

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
                "portal.context_processors.navigation",
            ],
        },
    },
]

if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    # A persistent connection broken by a database restart is replaced at its next use.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # PostgreSQL's JIT compiles the list queries (large row estimates) for ~0.7 s each and
        # never pays back on pages of 50 rows: off for the portal's connections.
        DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c jit=off"
        # An unreachable database fails a request in seconds (a 503), not at the TCP timeout.
        DATABASES["default"]["OPTIONS"].setdefault(
            "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5)
        )
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "portal.sqlite3",
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if REDIS_URL:
    # Bounded waits: an unreachable Redis fails the request in seconds (a 503); redis-py
    # reconnects by itself on the next command once it is back.
    _redis_timeout = env_int("REDIS_TIMEOUT_SECONDS", 5)
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": _redis_timeout, "socket_timeout": _redis_timeout},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Security: strict by default in production, relaxable for deployments behind a TLS proxy.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
if env_bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Input limits (docs/security.md): refused with a 4xx before a view or the database sees them.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("REQUEST_BODY_MAX_BYTES", 1024 * 1024)
REQUEST_PATH_MAX_CHARS = env_int("REQUEST_PATH_MAX_CHARS", 2048)
QUERY_STRING_MAX_BYTES = env_int("QUERY_STRING_MAX_BYTES", 4096)
QUERY_PARAMETERS_MAX = env_int("QUERY_PARAMETERS_MAX", 50)
API_JSON_MAX_DEPTH = env_int("API_JSON_MAX_DEPTH", 64)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "portal.api.filters.FilterBackend",
        "portal.api.filters.OrderingFilter",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "portal.api.parsers.BoundedJSONParser",
        "portal.api.parsers.BoundedFormParser",
        "portal.api.parsers.BoundedMultiPartParser",
    ],
    # Per user (per address when anonymous), counted in the default cache (Redis in production).
    "DEFAULT_THROTTLE_CLASSES": [
        "portal.api.throttling.UserRateThrottle",
        "portal.api.throttling.AnonRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("API_THROTTLE_USER_RATE", "1200/minute"),
        "anon": env_str("API_THROTTLE_ANON_RATE", "60/minute"),
    },
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "DRA Portal API",
    "DESCRIPTION": (
        "Devices, tenants, quotas and GPU claims on Kubernetes Dynamic Resource Allocation. "
        "Authenticate with a session or an API token (`Authorization: Bearer <token>`)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.document_errors",
    ],
}

# The cluster: KUBE_API_SERVER (a plain URL, e.g. the emulator), else KUBECONFIG (+ KUBE_CONTEXT),
# else the in-cluster service account.
KUBE_API_SERVER = env_str("KUBE_API_SERVER")
KUBECONFIG = env_str("KUBECONFIG")
KUBE_CONTEXT = env_str("KUBE_CONTEXT")
WATCH_RUN_SECONDS = env_int("WATCH_RUN_SECONDS", 240)  # one bounded watcher task
WATCH_REQUEST_SECONDS = env_int("WATCH_REQUEST_SECONDS", 60)  # timeoutSeconds of one watch
MIRROR_RESYNC_SECONDS = env_int("MIRROR_RESYNC_SECONDS", 15 * 60)  # full relist + reconcile
# A kind not heard from (event, bookmark or list) for longer is stale (amber); twice, red.
MIRROR_STALE_SECONDS = env_int("MIRROR_STALE_SECONDS", 90)
WATCHER_LOCK_TTL = env_int("WATCHER_LOCK_TTL", 30)
WATCHER_LOCK_PREFIX = env_str("WATCHER_LOCK_PREFIX", "dra-portal:watcher:")  # one per portal

# API tokens.
API_TOKEN_MAX_DAYS = env_int("API_TOKEN_MAX_DAYS", 365)

# Celery: with no REDIS_URL the tasks run in-process (eager), so a newcomer needs no broker.
# How stale (milliseconds) the claim allocation index may be for advisory reads (previews, counts);
# reservations always catch up with the mirror first.
CLAIMS_INDEX_FRESH_MS = env_int("CLAIMS_INDEX_FRESH_MS", 250)
# How old (seconds) the tenant usage behind the live preview's quota hint may be; submitting
# always counts afresh under the tenant's lock.
CLAIMS_PREVIEW_USAGE_SECONDS = env_int("CLAIMS_PREVIEW_USAGE_SECONDS", 5)
# How long (milliseconds) one request to the fragmentation advisor asks the allocator about nodes
# whose answer is out of date; the rest are answered by later requests (docs/fragmentation.md).
FRAGMENTATION_BUDGET_MS = env_int("FRAGMENTATION_BUDGET_MS", 5000)
# How long (milliseconds) one claim preview asks the allocator how many of the matching devices
# fit together, on nodes whose devices share counters (MIG); later previews finish the rest.
CLAIMS_PREVIEW_FIT_BUDGET_MS = env_int("CLAIMS_PREVIEW_FIT_BUDGET_MS", 500)
# How long a claim request may wait for approval before it expires (7d, 12h, P3D, ...).
try:
    CLAIMS_APPROVAL_TIMEOUT = parse_duration(env_str("CLAIMS_APPROVAL_TIMEOUT", "3d"))
except DurationError as error:
    raise ImproperlyConfigured(f"CLAIMS_APPROVAL_TIMEOUT: {error}") from error
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 15 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 14 * 60)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_RESULT_EXPIRES = timedelta(days=1)

# Email (notifications): SMTP when EMAIL_HOST is set, else printed to the console (the demo).
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_secret("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=EMAIL_PORT == 587)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", default=EMAIL_PORT == 465)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "DRA Portal <dra-portal@localhost>")
# Links in emails and webhooks point here (no request to build them from in a beat task).
PORTAL_URL = env_str("PORTAL_URL", "http://localhost:8000").rstrip("/")
# Notifications: how long before a lease ends its owner is told (e.g. 24h, 2d, PT12H); the
# usage share (percent of any quota limit) that counts as "quota high"; webhook timeout.
try:
    NOTIFY_LEASE_LEAD = parse_duration(env_str("NOTIFY_LEASE_LEAD", "24h"))
except DurationError as error:
    raise ImproperlyConfigured(f"NOTIFY_LEASE_LEAD: {error}") from None
NOTIFY_QUOTA_HIGH_PERCENT = env_int("NOTIFY_QUOTA_HIGH_PERCENT", 90)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 5)
# Off by default: a tenant's webhook may not point the workers at their own network.
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env_bool("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", False)

# Telemetry (GPU readings): how long raw samples, 5-minute and hourly rollups are kept.
try:
    TELEMETRY_RAW_RETENTION = parse_duration(env_str("TELEMETRY_RAW_RETENTION", "2h"))
    TELEMETRY_5M_RETENTION = parse_duration(env_str("TELEMETRY_5M_RETENTION", "8d"))
    TELEMETRY_1H_RETENTION = parse_duration(env_str("TELEMETRY_1H_RETENTION", "90d"))
except DurationError as error:
    raise ImproperlyConfigured(f"TELEMETRY_*_RETENTION: {error}") from None

# Idle claims (docs/idle.md): allocated with no pod in reservedFor for IDLE_NO_CONSUMER_AFTER, or
# every device under IDLE_UTILISATION_THRESHOLD percent for IDLE_LOW_UTILISATION_AFTER; tenants
# whose idle policy reclaims them get IDLE_RECLAIM_GRACE to react before the claim is deleted.
# Each tenant's idle policy (portal admin) may override any of them.
try:
    IDLE_NO_CONSUMER_AFTER = parse_duration(env_str("IDLE_NO_CONSUMER_AFTER", "2h"))
    IDLE_LOW_UTILISATION_AFTER = parse_duration(env_str("IDLE_LOW_UTILISATION_AFTER", "4h"))
    IDLE_RECLAIM_GRACE = parse_duration(env_str("IDLE_RECLAIM_GRACE", "24h"))
except DurationError as error:
    raise ImproperlyConfigured(f"IDLE_*: {error}") from None
IDLE_UTILISATION_THRESHOLD = env_int("IDLE_UTILISATION_THRESHOLD", 5)

# -- Operations (docs/operations.md): probes, metrics, logs ------------------------------------
# /readyz: how long a check waits to connect and for an answer; how long the API server's
# answer is kept (probes of every pod would otherwise each ask it).
READYZ_TIMEOUT_SECONDS = env_int("READYZ_TIMEOUT_SECONDS", 2)
READYZ_CLUSTER_CACHE_SECONDS = env_int("READYZ_CLUSTER_CACHE_SECONDS", 5)
# The kubelet and Prometheus ask the probes and /metrics over plain HTTP, by pod IP: no HTTPS
# redirect for them (nor a host check: portal.middleware.ProbeMiddleware).
SECURE_REDIRECT_EXEMPT = [r"^(healthz|readyz|metrics)$"]
# /metrics: served to these networks (CIDRs), or to a scraper presenting
# "Authorization: Bearer <METRICS_TOKEN>". The multi-process directory is the client library's
# own PROMETHEUS_MULTIPROC_DIR, read from the environment.
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
METRICS_TOKEN = env_secret("METRICS_TOKEN")
# A Celery worker serves its metrics on this port (0: none); the web serves /metrics.
METRICS_PORT = env_int("METRICS_PORT", 0)
# How long metrics read from the database and Redis at scrape time are kept.
METRICS_CACHE_SECONDS = env_int("METRICS_CACHE_SECONDS", 10)
for _network in METRICS_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"METRICS_ALLOWED_NETWORKS: {_network!r} is not a network (e.g. 10.0.0.0/8)."
        ) from None
# Logs: "text" (the demo) or "json" (one object per line, with the request id; docs).
LOG_FORMAT = env_str("LOG_FORMAT", "text").strip().lower()
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: use text or json.")
# One log line per request (portal.access): on by default with JSON logs, where it replaces
# gunicorn's access log.
LOG_REQUESTS = env_bool("LOG_REQUESTS", default=LOG_FORMAT == "json")
# Celery workers log through LOGGING below (same format, task context), not Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "portal.logs.ContextFilter"}},
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s%(context)s"},
        "json": {"()": "portal.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["context"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
