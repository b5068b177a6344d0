"""The claims routes, registered on the one ``/api/v1/`` router (``home.api_urls``)."""

from claims.api import views

ROUTES = [
    ("resource-claims", views.ResourceClaimViewSet, "resourceclaim"),
]
