"""A tenant's idle policy: when its claims count as idle, and whether the portal takes idle
claims back (``docs/idle.md``). Blank fields follow the portal's ``IDLE_*`` settings."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models

from portal.models.tenants import Tenant

__all__ = ["EffectiveIdlePolicy", "IdlePolicy", "IdlePolicyQuerySet"]


@dataclass(frozen=True, slots=True)
class EffectiveIdlePolicy:
    """The rules that apply to one tenant's claims: its overrides, else the settings."""

    no_consumer_after: datetime.timedelta
    utilisation_threshold: int  # percent
    low_utilisation_after: datetime.timedelta
    reclaim: bool
    grace_period: datetime.timedelta

    @classmethod
    def defaults(cls) -> EffectiveIdlePolicy:
        """The settings alone: claims of no tenant, and tenants without a policy row."""
        return cls(
            no_consumer_after=settings.IDLE_NO_CONSUMER_AFTER,
            utilisation_threshold=settings.IDLE_UTILISATION_THRESHOLD,
            low_utilisation_after=settings.IDLE_LOW_UTILISATION_AFTER,
            reclaim=False,
            grace_period=settings.IDLE_RECLAIM_GRACE,
        )


class IdlePolicyQuerySet(models.QuerySet["IdlePolicy"]):
    def effective(self) -> dict[int, EffectiveIdlePolicy]:
        """Tenant id → its effective policy, for every tenant with a policy row (one query);
        the others follow ``EffectiveIdlePolicy.defaults()``."""
        return {policy.tenant_id: policy.effective() for policy in self.all()}


class IdlePolicy(models.Model):
    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="idle_policy")
    reclaim = models.BooleanField(
        "reclaim idle claims",
        default=False,
        help_text="Delete idle claims after the grace period, but only claims no pod reserves "
        "at that moment. Off: idle claims are flagged and their owners told, nothing more.",
    )
    grace_period = models.DurationField(
        null=True,
        blank=True,
        help_text="Time between a claim being flagged idle and its reclaim. "
        "Blank: the portal default (IDLE_RECLAIM_GRACE).",
    )
    no_consumer_after = models.DurationField(
        null=True,
        blank=True,
        help_text="An allocated claim no pod uses for this long is idle. "
        "Blank: the portal default (IDLE_NO_CONSUMER_AFTER).",
    )
    utilisation_threshold = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(100)],
        help_text="GPU utilisation (percent) under which a claim's devices count as unused. "
        "Blank: the portal default (IDLE_UTILISATION_THRESHOLD).",
    )
    low_utilisation_after = models.DurationField(
        null=True,
        blank=True,
        help_text="A claim under the threshold for this long is idle. "
        "Blank: the portal default (IDLE_LOW_UTILISATION_AFTER).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    objects = IdlePolicyQuerySet.as_manager()

    class Meta:
        ordering = ["tenant__name"]
        verbose_name_plural = "idle policies"

    def __str__(self) -> str:
        return f"{self.tenant}: idle policy"

    def effective(self) -> EffectiveIdlePolicy:
        default = EffectiveIdlePolicy.defaults()
        return EffectiveIdlePolicy(
            no_consumer_after=self.no_consumer_after or default.no_consumer_after,
            utilisation_threshold=(
                default.utilisation_threshold
                if self.utilisation_threshold is None
                else self.utilisation_threshold
            ),
            low_utilisation_after=self.low_utilisation_after or default.low_utilisation_after,
            reclaim=self.reclaim,
            grace_period=default.grace_period if self.grace_period is None else self.grace_period,
        )
