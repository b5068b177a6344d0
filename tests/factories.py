"""Row factories for tests (factory_boy)."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from portal.models import Membership, Quota, Tenant, TenantNamespace


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ["username"]
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery")

    @factory.post_generation
    def saved(self, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            self.save()


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ["slug"]

    name = factory.Sequence(lambda n: f"Tenant {n}")
    slug = factory.LazyAttribute(lambda tenant: tenant.name.lower().replace(" ", "-"))


class TenantNamespaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TenantNamespace

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"ns-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    tenant = factory.SubFactory(TenantFactory)
    role = Membership.Role.MEMBER


class QuotaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Quota

    tenant = factory.SubFactory(TenantFactory)
    device_class_name = "gpu.nvidia.com"
    max_devices = 8
