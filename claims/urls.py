"""Claim pages."""

from django.urls import path

from claims import views

urlpatterns = [
    path("claims/", views.resourceclaim_list, name="resourceclaim-list"),
    path(
        "claims/<str:namespace>/<str:name>/",
        views.resourceclaim_detail,
        name="resourceclaim-detail",
    ),
]
