"""Claim pages: self-service claim requests, their approvals, and the mirrored ResourceClaims."""

from django.urls import path

from claims import views
from claims.capacity.views import fragmentation as fragmentation_views
from claims.requests.views import approvals as approval_views
from claims.requests.views import requests as request_views
from claims.usage.views import reports as report_views
from claims.usage.views import sharing as sharing_views

urlpatterns = [
    path("approvals/", approval_views.approval_list, name="approval-list"),
    path("approvals/count/", approval_views.approval_count, name="approval-count"),
    path("approvals/<uuid:pk>/approve/", approval_views.approval_approve, name="approval-approve"),
    path("approvals/<uuid:pk>/deny/", approval_views.approval_deny, name="approval-deny"),
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
    path("sharing/", sharing_views.sharing, name="sharing"),
    path("fragmentation/", fragmentation_views.fragmentation, name="fragmentation"),
    path(
        "fragmentation/nodes/<str:name>/",
        fragmentation_views.fragmentation_node,
        name="fragmentation-node",
    ),
    path("claims/", views.resourceclaim_list, name="resourceclaim-list"),
    path("claims/usage/idle/", views.idle_claim_list, name="idle-claim-list"),
    path(
        "claims/<str:namespace>/<str:name>/",
        views.resourceclaim_detail,
        name="resourceclaim-detail",
    ),
]
