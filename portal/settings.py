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
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from portal.environment import (
    env_bool,
    env_int,
    env_list,
    env_list_secret,
    env_secret,
    env_str,
)
from portal.security_headers import PERMISSIONS_POLICY as PORTAL_PERMISSIONS_POLICY
from portal.security_headers import content_security_policy, identity_provider_origins
from portal.sign_in.config import check_oidc_settings, local_login_mode
from portal.sign_in.groups import parse_group_map
from toolkit.durations import DurationError, parse_duration

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PORTAL_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", default=True)

SECRET_KEY = env_secret("SECRET_KEY")
# Former keys, which still verify what they signed (sessions, password-reset links) while
# SECRET_KEY takes over from them: separated by commas or new lines (docs/deploy.md).
SECRET_KEY_FALLBACKS = env_list_secret("SECRET_KEY_FALLBACKS")
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
    "csp",
    "toolkit",
    "portal",
    "devices",
    "claims",
    "mirror",
    "notifications",
    "home",
    "demo",
]

# Outermost first. Request ids and timing come first, the probes right after the security
# headers and before host validation and sessions (see portal/middleware.py);
# ServiceUnavailableMiddleware stays after Django's.
MIDDLEWARE = [
    "portal.middleware.RequestIdMiddleware",
    "portal.middleware.RequestTimingMiddleware",
    # Security headers first: they reach every response, including the API's error format
    # (which replaces other middlewares' responses) and the request limits' refusals.
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "portal.middleware.ProbeMiddleware",
    "portal.middleware.ApiErrorFormatMiddleware",
    "portal.middleware.RequestLimitsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "portal.middleware.ServiceUnavailableMiddleware",
    "portal.sign_in.middleware.SessionRefresh",
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
    # Django reads DATABASES as plain dicts (dj-database-url types its result as a TypedDict).
    DATABASES: dict[str, dict[str, Any]] = {
        "default": dict(dj_database_url.parse(DATABASE_URL, conn_max_age=60))
    }
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

# Sign-in (docs/sign-in.md): single sign-on with OpenID Connect (mozilla-django-oidc, the
# authorization code flow with PKCE) when OIDC_ISSUER is set, and local passwords as
# LOCAL_LOGIN allows. The identity provider's groups become tenant memberships and roles
# (OIDC_GROUP_MAP) and portal admins (OIDC_ADMIN_GROUPS) at every sign-in.
OIDC_ISSUER = env_str("OIDC_ISSUER").strip()  # exactly as the provider spells it
OIDC_ENABLED = bool(OIDC_ISSUER)
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")  # "Sign in with ..."
OIDC_RP_CLIENT_ID = env_str("OIDC_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env_secret("OIDC_CLIENT_SECRET")
OIDC_RP_SCOPES = env_str("OIDC_SCOPES", "openid email profile")
OIDC_RP_SIGN_ALGO = env_str("OIDC_SIGN_ALGORITHM", "RS256")
OIDC_USERNAME_CLAIM = env_str("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")  # a dotted path reaches nested claims
OIDC_GROUP_MAP = parse_group_map(env_str("OIDC_GROUP_MAP"))  # group → tenant slug + role
OIDC_ADMIN_GROUPS = env_list("OIDC_ADMIN_GROUPS")  # → is_staff (portal admin)
OIDC_ADMIN_SUPERUSER = env_bool("OIDC_ADMIN_SUPERUSER", default=False)  # and is_superuser
# First sign-in of someone whose username a local account already has: link them (true) or
# refuse (false: a provider's preferred_username is not always controlled by its admins).
OIDC_LINK_EXISTING_USERS = env_bool("OIDC_LINK_EXISTING_USERS", default=False)
OIDC_END_SESSION_URL = env_str("OIDC_END_SESSION_URL")  # default: the discovery document's
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env_int("OIDC_RENEW_SECONDS", 15 * 60)  # 0: never
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT_SECONDS", 10)
check_oidc_settings(
    issuer=OIDC_ISSUER,
    client_id=OIDC_RP_CLIENT_ID,
    client_secret=OIDC_RP_CLIENT_SECRET,
    sign_algorithm=OIDC_RP_SIGN_ALGO,
    debug=DEBUG,
)
# Fixed: PKCE (S256) and a nonce on every authorization request, the client secret sent with
# HTTP Basic (the OpenID default), the ID token kept in the session for logout at the provider.
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_TOKEN_USE_BASIC_AUTH = True
OIDC_STORE_ID_TOKEN = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc-callback"
LOCAL_LOGIN_USERS = env_list("LOCAL_LOGIN_USERS")  # break-glass accounts (LOCAL_LOGIN=listed)
LOCAL_LOGIN = local_login_mode(
    env_str("LOCAL_LOGIN"), oidc_enabled=OIDC_ENABLED, users=LOCAL_LOGIN_USERS
)
AUTHENTICATION_BACKENDS = [
    "portal.sign_in.backends.LocalPasswordBackend",  # passwords, as LOCAL_LOGIN allows
    "portal.sign_in.backends.OidcBackend",  # only ever called by the OIDC callback view
]

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
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
if env_bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Security headers (docs/security.md "Headers"); the middlewares are first in MIDDLEWARE.
# HSTS: on in production (sent on HTTPS requests: TLS at gunicorn, or at a proxy trusted with
# SECURE_PROXY_SSL_HEADER); SECURE_HSTS_SECONDS=0 turns it off.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp, portal/security_headers.py): strict, nothing inline, no
# eval. Forms may also go to the identity provider (the origins of the OIDC_* URLs, plus
# CSP_FORM_ACTION); CSP_REPORT_ONLY=true sends it as Content-Security-Policy-Report-Only, and
# CSP_REPORT_URI names where browsers report violations.
# (No setting of ours may start with CSP_: django-csp takes those for its old format.)
_content_security = content_security_policy(
    form_action=[*identity_provider_origins(os.environ), *env_list("CSP_FORM_ACTION")],
    report_uri=env_str("CSP_REPORT_URI"),
)
_report_only = env_bool("CSP_REPORT_ONLY", default=False)
CONTENT_SECURITY_POLICY = None if _report_only else _content_security
CONTENT_SECURITY_POLICY_REPORT_ONLY = _content_security if _report_only else None
# Permissions-Policy (django-permissions-policy): every powerful feature off but clipboard-write.
PERMISSIONS_POLICY = PORTAL_PERMISSIONS_POLICY
# --- end of security headers.

# Input limits (docs/security.md): refused with a 4xx before a view or the database sees them.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("REQUEST_BODY_MAX_BYTES", 1024 * 1024)
REQUEST_PATH_MAX_CHARS = env_int("REQUEST_PATH_MAX_CHARS", 2048)
QUERY_STRING_MAX_BYTES = env_int("QUERY_STRING_MAX_BYTES", 4096)
QUERY_PARAMETERS_MAX = env_int("QUERY_PARAMETERS_MAX", 50)
API_JSON_MAX_DEPTH = env_int("API_JSON_MAX_DEPTH", 64)

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "toolkit.api.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "toolkit.api.filters.FilterBackend",
        "toolkit.api.filters.OrderingFilter",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "toolkit.api.parsers.BoundedJSONParser",
        "toolkit.api.parsers.BoundedFormParser",
        "toolkit.api.parsers.BoundedMultiPartParser",
    ],
    # Per user, counted in the default cache (Redis in production); the per-address rate of
    # requests without valid credentials is charged during authentication (the sign-in block).
    "DEFAULT_THROTTLE_CLASSES": ["toolkit.api.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("API_THROTTLE_USER_RATE", "1200/minute"),
        "anon": env_str("API_THROTTLE_ANON_RATE", "60/minute"),
    },
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "toolkit.api.errors.exception_handler",
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
        "toolkit.api.schema.document_errors",
    ],
}

# The cluster: KUBE_API_SERVER (a plain URL, e.g. the emulator), else KUBECONFIG (+ KUBE_CONTEXT),
# else the in-cluster service account.
KUBE_API_SERVER = env_str("KUBE_API_SERVER")
KUBECONFIG = env_str("KUBECONFIG")
KUBE_CONTEXT = env_str("KUBE_CONTEXT")
# A watcher makes a fresh client and reflector this often (the configuration read again).
WATCH_RUN_SECONDS = env_int("WATCH_RUN_SECONDS", 240)
WATCH_REQUEST_SECONDS = env_int("WATCH_REQUEST_SECONDS", 60)  # timeoutSeconds of one watch
MIRROR_RESYNC_SECONDS = env_int("MIRROR_RESYNC_SECONDS", 15 * 60)  # full relist + reconcile
# A kind not heard from (event, bookmark or list) for longer is stale (amber); twice, red.
MIRROR_STALE_SECONDS = env_int("MIRROR_STALE_SECONDS", 90)
# One watcher per kind (mirror/locks.py): its lock expires this long after its holder died;
# standby watchers (the other replica) try to take a kind every WATCHER_STANDBY_SECONDS.
WATCHER_LOCK_TTL = env_int("WATCHER_LOCK_TTL", 10)
WATCHER_STANDBY_SECONDS = env_int("WATCHER_STANDBY_SECONDS", 1)
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
# A claim request left submitted, allocating or releasing this long (a worker died mid-apply)
# is enqueued again by beat's claims.resume_requests (every 30 s).
CLAIMS_RESUME_AFTER_SECONDS = env_int("CLAIMS_RESUME_AFTER_SECONDS", 30)
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
# --- Sign-in hardening: the client address, failed-authentication rate, lockouts ---------------
# (docs/security.md, docs/configuration.md). Reverse proxies in front of the portal that append
# to X-Forwarded-For; 0 trusts no header and uses REMOTE_ADDR (toolkit.client_address).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
# DRF authenticates before it throttles, so the per-address rate (API_THROTTLE_ANON_RATE) of
# requests without valid credentials is charged by the last authentication class.
REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"] = [
    *REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"],
    "portal.api.authentication.UnauthenticatedRequests",
]
# Password sign-in (the login page and the admin's) with django-axes: after LOGIN_FAILURE_LIMIT
# wrong passwords for one username from one client address, that pair is locked out for
# LOGIN_LOCKOUT_COOLOFF (each try while locked out starts it again); a success clears the
# count. Attempts live in the database (portal admins see and delete them in the admin:
# "Access attempts"; or manage.py axes_reset_username / axes_reset_ip_username). Axes' backend
# goes first: it refuses a locked-out pair before any backend checks a password. Only password
# sign-ins count (AXES_WHITELIST_CALLABLE): a single sign-on callback carries no password, and
# its failures must not lock an address out of single sign-on. The lockout page and its audit
# event: portal.views.sign_in, portal.services.sign_in.
INSTALLED_APPS.append("axes")
MIDDLEWARE.append("axes.middleware.AxesMiddleware")  # last, as axes asks
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", *AUTHENTICATION_BACKENDS]
AXES_WHITELIST_CALLABLE = "portal.views.sign_in.is_not_a_password_sign_in"
AXES_ENABLED = env_bool("LOGIN_LOCKOUT_ENABLED", default=True)
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
try:
    AXES_COOLOFF_TIME = parse_duration(env_str("LOGIN_LOCKOUT_COOLOFF", "15m"))
except DurationError as error:
    raise ImproperlyConfigured(f"LOGIN_LOCKOUT_COOLOFF: {error}") from None
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured("LOGIN_FAILURE_LIMIT must be at least 1.")
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "toolkit.client_address.client_address"
AXES_LOCKOUT_CALLABLE = "portal.views.sign_in.lockout_response"
AXES_VERBOSE = False  # log the lockout's username and address only, and no banner at start-up

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
