"""The claims routes, registered on the one ``/api/v1/`` router (``home.api_urls``), and the
paths outside the router."""

from django.urls import path

from claims.api import fragmentation, reports, resource_claims, views

ROUTES = [
    ("resource-claims", resource_claims.ResourceClaimViewSet, "resourceclaim"),
    ("claim-requests", views.ClaimRequestViewSet, "claimrequest"),
]

PATHS = [
    path("tenants/<str:slug>/usage/", views.TenantUsageView.as_view(), name="tenant-usage"),
    path(
        "tenants/<str:slug>/utilisation/",
        views.TenantUtilisationView.as_view(),
        name="tenant-utilisation",
    ),
    path(
        "reports/allocation-hours/", reports.AllocationHoursView.as_view(), name="allocation-hours"
    ),
    path("fragmentation/", fragmentation.FragmentationView.as_view(), name="fragmentation"),
    path(
        "fragmentation/nodes/<str:name>/",
        fragmentation.FragmentationNodeView.as_view(),
        name="fragmentation-node",
    ),
]
