"""Root URLs: pages, the admin, the API (``/api/v1/``) and its documentation."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from home import operations
from home import views as home
from portal.sign_in import views as sign_in
from portal.views import api_tokens, audit, members, quotas, tenants

admin.site.site_header = "DRA Portal administration"
admin.site.site_title = "DRA Portal admin"
admin.site.index_title = "Tenants, quotas and the cluster mirror"

handler500 = "portal.views.errors.server_error"

urlpatterns = [
    path("", home.dashboard, name="dashboard"),
    path("favicon.ico", home.favicon, name="favicon"),
    # Operations (docs/operations.md): answered by portal.middleware.ProbeMiddleware.
    path("healthz", operations.healthz, name="healthz"),
    path("readyz", operations.readyz, name="readyz"),
    path("metrics", operations.metrics, name="metrics"),
    path("login/", sign_in.LoginView.as_view(), name="login"),
    path("logout/", sign_in.LogoutView.as_view(), name="logout"),
    path("oidc/authenticate/", sign_in.OidcAuthenticateView.as_view(), name="oidc-authenticate"),
    path("oidc/callback/", sign_in.OidcCallbackView.as_view(), name="oidc-callback"),
    path("tenants/", tenants.tenant_list, name="tenant-list"),
    path("tenants/new/", tenants.tenant_create, name="tenant-new"),
    path("tenants/<slug:slug>/", tenants.tenant_detail, name="tenant-detail"),
    path("tenants/<slug:slug>/edit/", tenants.tenant_edit, name="tenant-edit"),
    path("tenants/<slug:slug>/namespaces/", tenants.tenant_namespaces, name="tenant-namespaces"),
    path("tenants/<slug:slug>/quotas/", quotas.quota_list, name="tenant-quotas"),
    path("tenants/<slug:slug>/quotas/new/", quotas.quota_new, name="tenant-quota-new"),
    path("tenants/<slug:slug>/quotas/<int:pk>/edit/", quotas.quota_edit, name="tenant-quota-edit"),
    path(
        "tenants/<slug:slug>/quotas/<int:pk>/delete/",
        quotas.quota_delete,
        name="tenant-quota-delete",
    ),
    path("tenants/<slug:slug>/members/", members.member_list, name="tenant-members"),
    path("tenants/<slug:slug>/members/<int:pk>/", members.member_edit, name="tenant-member"),
    path(
        "tenants/<slug:slug>/members/<int:pk>/remove/",
        members.member_remove,
        name="tenant-member-remove",
    ),
    path("audit/", audit.auditevent_list, name="auditevent-list"),
    path("audit/export.csv", audit.auditevent_export, name="auditevent-export"),
    path("account/tokens/", api_tokens.apitoken_list, name="apitoken-list"),
    path("account/tokens/<int:pk>/revoke/", api_tokens.apitoken_revoke, name="apitoken-revoke"),
    path("", include("devices.urls")),
    path("", include("claims.urls")),
    path("", include("mirror.urls")),
    path("", include("notifications.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("home.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Split: the page's script is a file of its own (?script=), for the Content-Security-Policy.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
