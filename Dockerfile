# The application image: web (gunicorn), Celery workers and beat, the migration Job and the
# NVML exporter all run from it. It runs as uid/gid 10001 with a read-only root filesystem
# (deploy/): nothing is written under /app at run time but /app/var (beat's schedule: a
# volume) and /tmp (a volume); static files are collected and bytecode compiled here.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    STATIC_ROOT=/app/staticfiles PORTAL_VAR_DIR=/app/var
WORKDIR /app

COPY pyproject.toml README.md ./
COPY portal ./portal
COPY devices ./devices
COPY claims ./claims
RUN pip install .
COPY . .
# collectstatic needs no real secrets: DEBUG=false only selects the hashed-manifest storage.
RUN DEBUG=false SECRET_KEY=collectstatic-only-not-a-secret-0123456789abcdefghijklmnop \
    ALLOWED_HOSTS=build DATABASE_URL=postgres://build/build REDIS_URL=redis://build:6379/0 \
    python manage.py collectstatic --no-input \
 && python -m compileall -q /app \
 && groupadd --system --gid 10001 portal \
 && useradd --system --uid 10001 --gid 10001 --home /app portal \
 && mkdir -p /app/var && chown portal:portal /app/var
# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
