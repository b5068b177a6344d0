"""``/api/v1/``: one router for every app's endpoints.

Without DRF's format-suffix routes (``/devices.json``): JSON is the default, and ``Accept`` or
``?format=`` choose another representation. The suffix spelling existed only for the router's
URLs, and its custom actions, which take no ``format`` argument, answered it with a 500; now
every ``.json`` URL is a 404 in the API's error format, as a path the API does not have.
"""

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
router.include_format_suffixes = False
router.register("tenants", views.TenantViewSet, basename="tenant")
router.register("quotas", views.QuotaViewSet, basename="quota")
router.register("audit-events", views.AuditEventViewSet, basename="auditevent")
for prefix, viewset, basename in [*DEVICE_ROUTES, *CLAIM_ROUTES, *MIRROR_ROUTES]:
    router.register(prefix, viewset, basename=basename)

urlpatterns = [
    path("me/", views.CurrentUserView.as_view(), name="me"),
    path("configuration/", views.ConfigurationView.as_view(), name="configuration"),
    *CLAIM_PATHS,
    *DEVICE_PATHS,
    path("", include(router.urls)),
]
