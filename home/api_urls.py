"""``/api/v1/``: one router for every app's endpoints."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from claims.api.urls import PATHS as CLAIM_PATHS
from claims.api.urls import ROUTES as CLAIM_ROUTES
from devices.api.urls import PATHS as DEVICE_PATHS
from devices.api.urls import ROUTES as DEVICE_ROUTES
from mirror.api import ROUTES as MIRROR_ROUTES
from portal.api import views

app_name = "api"

router = DefaultRouter()
router.register("tenants", views.TenantViewSet, basename="tenant")
router.register("quotas", views.QuotaViewSet, basename="quota")
router.register("audit-events", views.AuditEventViewSet, basename="auditevent")
for prefix, viewset, basename in [*DEVICE_ROUTES, *CLAIM_ROUTES, *MIRROR_ROUTES]:
    router.register(prefix, viewset, basename=basename)

urlpatterns = [
    path("me/", views.CurrentUserView.as_view(), name="me"),
    *CLAIM_PATHS,
    *DEVICE_PATHS,
    path("", include(router.urls)),
]
