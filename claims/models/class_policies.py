"""How the portal hands out devices of one DeviceClass (an admin setting, shown on the form)."""

from __future__ import annotations

from django.db import models

__all__ = ["AllocationMode", "ClassPolicy"]


class AllocationMode(models.TextChoices):
    # The claim is created unallocated; the kube-scheduler allocates it for the first pod.
    SCHEDULER = "scheduler", "Scheduler"
    # The portal allocates and writes status.allocation with its finalizer: the devices stay
    # held for the lease, between jobs too.
    RESERVATION = "reservation", "Reservation"


class ClassPolicyQuerySet(models.QuerySet["ClassPolicy"]):
    def mode_for(self, device_class_name: str) -> AllocationMode:
        """The class's mode; classes without a policy use the scheduler."""
        mode = self.filter(device_class_name=device_class_name).values_list("mode", flat=True)
        return AllocationMode(mode.first() or AllocationMode.SCHEDULER)


class ClassPolicy(models.Model):
    """Per DeviceClass: which allocation mode self-service requests of it use.

    Keyed by class name, like quotas: a policy may be set before a driver publishes its class.
    """

    device_class_name = models.CharField("device class", max_length=253, unique=True)
    mode = models.CharField(
        max_length=20, choices=AllocationMode.choices, default=AllocationMode.SCHEDULER
    )
    updated_at = models.DateTimeField(auto_now=True)

    objects = ClassPolicyQuerySet.as_manager()

    class Meta:
        ordering = ["device_class_name"]
        verbose_name_plural = "class policies"

    def __str__(self) -> str:
        return f"{self.device_class_name}: {self.get_mode_display()}"
