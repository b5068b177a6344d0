"""The tenancy domain: tenants own namespaces, users are members, quotas bound device use."""

from portal.models.api_tokens import ApiToken
from portal.models.audit import AuditEvent
from portal.models.identities import ExternalIdentity
from portal.models.idle_policies import EffectiveIdlePolicy, IdlePolicy
from portal.models.memberships import Membership
from portal.models.quotas import Quota
from portal.models.tenants import Tenant, TenantNamespace

__all__ = [
    "ApiToken",
    "AuditEvent",
    "EffectiveIdlePolicy",
    "ExternalIdentity",
    "IdlePolicy",
    "Membership",
    "Quota",
    "Tenant",
    "TenantNamespace",
]
