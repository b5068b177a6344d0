"""Claim pages: self-service claim requests, and the mirrored ResourceClaims."""

from django.urls import path

from claims import report_views, request_views, views

urlpatterns = [
    # Before the mirrored claims' <namespace>/<name>, which "requests/…" would otherwise match.
    path("claims/requests/", request_views.claimrequest_list, name="claimrequest-list"),
    path("claims/requests/new/", request_views.claimrequest_new, name="claimrequest-new"),
    path(
        "claims/requests/preview/",
        request_views.claimrequest_preview,
        name="claimrequest-preview",
    ),
    path(
        "claims/requests/<uuid:pk>/",
        request_views.claimrequest_detail,
        name="claimrequest-detail",
    ),
    path(
        "claims/requests/<uuid:pk>/release/",
        request_views.claimrequest_release,
        name="claimrequest-release",
    ),
    path(
        "claims/requests/<uuid:pk>/renew/",
        request_views.claimrequest_renew,
        name="claimrequest-renew",
    ),
    path("reports/", report_views.allocation_report, name="allocation-report"),
    path("claims/", views.resourceclaim_list, name="resourceclaim-list"),
    path(
        "claims/<str:namespace>/<str:name>/",
        views.resourceclaim_detail,
        name="resourceclaim-detail",
    ),
]
