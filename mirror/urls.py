"""The Mirror status page."""

from django.urls import path

from mirror import views

urlpatterns = [
    path("mirror/", views.mirror_status, name="mirror-status"),
]
