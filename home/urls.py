"""Root URLs: pages, the admin, the API (``/api/v1/``) and its documentation."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from home import views as home
from portal.views import api_tokens, tenants

admin.site.site_header = "DRA Portal administration"
admin.site.site_title = "DRA Portal admin"
admin.site.index_title = "Tenants, quotas and the cluster mirror"

handler500 = "portal.views.errors.server_error"

urlpatterns = [
    path("", home.dashboard, name="dashboard"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("tenants/", tenants.tenant_list, name="tenant-list"),
    path("tenants/<slug:slug>/", tenants.tenant_detail, name="tenant-detail"),
    path("account/tokens/", api_tokens.apitoken_list, name="apitoken-list"),
    path("account/tokens/<int:pk>/revoke/", api_tokens.apitoken_revoke, name="apitoken-revoke"),
    path("", include("devices.urls")),
    path("", include("claims.urls")),
    path("", include("mirror.urls")),
    path("", include("notifications.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("home.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
