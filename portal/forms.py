"""Forms of the tenancy pages.

Limits are typed the way Kubernetes people write them: device memory as quantities (``640Gi``)
and leases as durations (``7d``, ``12h``, ISO 8601 ``P7D``). The forms only parse; the rules
(which DeviceClasses exist, lease bounds, the last tenant admin) are the services', whose
``ValidationError`` the views put on the fields it names (``add_service_errors``).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_duration as parse_django_duration

from portal.models import Membership
from portal.models.tenants import dns_label_validator
from portal.services.api_tokens import TokenPolicy, lifetime_refusal
from toolkit.durations import DurationError, format_duration, parse_duration
from toolkit.quantities import QuantityError, format_bytes, parse_bytes

__all__ = [
    "ApiTokenForm",
    "DurationTextField",
    "MemberAddForm",
    "MemberRoleForm",
    "NamespacesForm",
    "QuantityField",
    "QuotaForm",
    "TenantCreateForm",
    "TenantSettingsForm",
    "add_service_errors",
    "read_duration",
]

MAX_COUNT = 2_147_483_647  # PositiveIntegerField


def read_duration(text: str) -> dt.timedelta:
    """``7d``, ``12h``, ``P7D`` (``toolkit.durations``), or Django's own ``"7 00:00:00"`` (what
    the API and the admin took before), which may be out of range: the services check bounds.
    Raises ``DurationError``."""
    try:
        return parse_duration(text)
    except DurationError as error:
        try:
            legacy = parse_django_duration(text.strip())
        except (OverflowError, ValueError):
            legacy = None
        if legacy is None:
            raise error from None
        return legacy


class QuantityField(forms.CharField):
    """Bytes, typed and shown as a Kubernetes quantity (``640Gi``). Blank: ``None``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.widget.attrs.setdefault("maxlength", "40")
        self.widget.attrs.setdefault("placeholder", "e.g. 640Gi; blank: unlimited")

    def prepare_value(self, value: Any) -> Any:
        return format_bytes(value) if isinstance(value, int) else value

    def to_python(self, value: Any) -> int | None:  # type: ignore[override]
        text = super().to_python(value)
        if not text:
            return None
        if len(text) > 40:
            raise ValidationError("Write a quantity such as 640Gi.", code="invalid")
        try:
            return parse_bytes(text)
        except QuantityError as error:
            raise ValidationError(str(error), code="invalid") from None


class DurationTextField(forms.CharField):
    """A duration, typed and shown as ``7d``/``12h`` (ISO 8601 accepted). Blank: ``None``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.widget.attrs.setdefault("maxlength", "40")
        self.widget.attrs.setdefault("placeholder", "e.g. 7d, 12h; blank: unlimited")

    def prepare_value(self, value: Any) -> Any:
        return format_duration(value) if isinstance(value, dt.timedelta) else value

    def to_python(self, value: Any) -> dt.timedelta | None:  # type: ignore[override]
        text = super().to_python(value)
        if not text:
            return None
        if len(text) > 40:
            raise ValidationError("Write a duration such as 7d or 12h.", code="invalid")
        try:
            return read_duration(text)
        except DurationError as error:
            raise ValidationError(str(error), code="invalid") from None


class StyledForm(forms.Form):
    """Bootstrap classes on every widget (``is-invalid`` on fields with errors), so that
    ``portal/includes/form_field.html`` can render any field."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.style_widgets()

    def style_widgets(self) -> None:
        for field in self.fields.values():
            widget = field.widget
            if isinstance(widget, forms.CheckboxInput):
                css = "form-check-input"
            elif isinstance(widget, forms.Select):
                css = "form-select"
            else:
                css = "form-control"
            widget.attrs["class"] = f"{css} {widget.attrs.get('class', '')}".strip()

    def full_clean(self) -> None:
        super().full_clean()
        self.mark_invalid()

    def add_error(self, field: str | None, error: Any) -> None:
        super().add_error(field, error)
        self.mark_invalid()

    def mark_invalid(self) -> None:
        for name in self.errors if self.is_bound else ():
            if name in self.fields:
                widget = self.fields[name].widget
                if "is-invalid" not in widget.attrs.get("class", ""):
                    widget.attrs["class"] = f"{widget.attrs.get('class', '')} is-invalid".strip()


def _count(label: str, help_text: str) -> forms.IntegerField:
    return forms.IntegerField(
        label=label, required=False, min_value=0, max_value=MAX_COUNT, help_text=help_text
    )


def add_service_errors(form: forms.Form, error: ValidationError) -> None:
    """Puts a service's ``ValidationError`` on the fields it names (others: the whole form)."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for field, problems in error.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)


class QuotaForm(StyledForm):
    """One tenant's quota and approval policy for one DeviceClass.

    ``device_classes``: the mirrored DeviceClasses, offered as a select (plus the class being
    edited, should the cluster have lost it). While the mirror has none, the name is typed.
    """

    device_class_name = forms.CharField(label="Device class", max_length=253)
    max_devices = _count("Devices", "Devices held at once. Blank: unlimited.")
    max_device_memory = QuantityField(
        label="Device memory", help_text="Sum of the devices' memory, e.g. 640Gi."
    )
    max_claims = _count("Claims", "ResourceClaims held at once. Blank: unlimited.")
    max_lease = DurationTextField(
        label="Longest lease", help_text="Longest lease a claim may ask for, e.g. 7d."
    )
    approve_above_devices = _count(
        "Approval above devices", "Requests for more devices than this wait for approval."
    )
    approve_above_memory = QuantityField(
        label="Approval above memory",
        help_text="Requests for more device memory than this wait for approval.",
    )
    approve_above_lease = DurationTextField(
        label="Approval above lease",
        help_text="Requests for a longer lease than this wait for approval.",
    )
    approve_over_quota = forms.BooleanField(
        label="Over-quota requests wait for approval",
        required=False,
        help_text="Instead of being refused.",
    )

    def __init__(self, *args: Any, device_classes: set[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = self.initial.get("device_class_name") or ""
        names = sorted(device_classes | ({current} if current else set()))
        if device_classes:
            self.fields["device_class_name"] = forms.ChoiceField(
                label="Device class",
                choices=[("", "Choose a DeviceClass"), *((name, name) for name in names)],
                help_text="The DeviceClasses of the mirrored cluster.",
            )
            self.style_widgets()

    def limits(self) -> dict[str, Any]:
        """The cleaned values as ``save_quota`` keyword arguments."""
        return dict(self.cleaned_data)


class TenantSettingsForm(StyledForm):
    """What a tenant admin may change of their tenant; portal admins also rename it."""

    name = forms.CharField(max_length=100)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), max_length=2000
    )
    requires_approval = forms.BooleanField(
        required=False,
        label="Every claim request waits for approval",
        help_text="By a tenant admin or a portal admin.",
    )
    max_token_lifetime = DurationTextField(
        label="Longest API token lifetime",
        help_text="Members' API tokens expire within this (e.g. 90d). Blank: no limit.",
    )

    def __init__(self, *args: Any, can_rename: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not can_rename:
            del self.fields["name"]


def _namespace_list(text: str) -> list[str]:
    return [name for name in text.replace(",", " ").split() if name]


class NamespacesForm(StyledForm):
    namespaces = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "class": "font-monospace"}),
        help_text="Kubernetes namespaces the tenant owns, one per line.",
    )

    def clean_namespaces(self) -> str:
        text: str = self.cleaned_data.get("namespaces") or ""
        problems = []
        for name in _namespace_list(text):
            try:
                dns_label_validator(name)
            except ValidationError:
                problems.append(f"“{name[:63]}” is not a Kubernetes namespace name.")
        if problems:
            raise ValidationError([*problems, "Use up to 63 lowercase letters, digits and '-'."])
        return text

    def namespace_names(self) -> list[str]:
        return _namespace_list(self.cleaned_data.get("namespaces") or "")


class TenantCreateForm(NamespacesForm):
    name = forms.CharField(max_length=100)
    slug = forms.SlugField(
        max_length=63, required=False, help_text="Used in URLs. Blank: made from the name."
    )
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), max_length=2000
    )
    requires_approval = forms.BooleanField(
        required=False, label="Every claim request waits for approval"
    )

    field_order = ["name", "slug", "description", "namespaces", "requires_approval"]


class MemberAddForm(StyledForm):
    username = forms.CharField(
        max_length=150, widget=forms.TextInput(attrs={"autocomplete": "off"})
    )
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class MemberRoleForm(StyledForm):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class ApiTokenForm(forms.Form):
    """A new API token. It offers only the lifetimes ``policy`` (the user's
    :func:`~portal.services.api_tokens.token_policy`) allows: under a limit, the shorter
    choices and the limit itself ("never" is the longest allowed, as in ``issue_api_token``);
    the default is 90 days, or the limit when that is shorter. Any whole number of days is
    read, so ``issue_api_token`` explains a refusal in the policy's words."""

    LIFETIME_DAYS = {7: "7 days", 30: "30 days", 90: "90 days", 365: "1 year"}
    DEFAULT_DAYS = 90
    LONGEST = "never"  # no expiry; under a policy, its limit

    name = forms.CharField(
        max_length=100, widget=forms.TextInput(attrs={"placeholder": "e.g. CI pipeline"})
    )
    lifetime = forms.CharField(label="Expires after", widget=forms.Select)

    def __init__(self, *args: Any, policy: TokenPolicy | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [
            (str(days), label)
            for days, label in self.LIFETIME_DAYS.items()
            if lifetime_refusal(dt.timedelta(days=days), policy) is None
            and (policy is None or dt.timedelta(days=days) < policy.max_lifetime)
        ]
        if policy is None:
            choices.append((self.LONGEST, "Never expires"))
        else:
            limit = format_duration(policy.max_lifetime)
            choices.append((self.LONGEST, f"{limit} (the longest allowed)"))
        default = str(self.DEFAULT_DAYS)
        self.lifetime_choices = choices
        self.fields["lifetime"].widget.choices = choices
        self.fields["lifetime"].initial = (
            default if any(value == default for value, _ in choices) else self.LONGEST
        )

    def clean_lifetime(self) -> str:
        value: str = self.cleaned_data["lifetime"]
        if value != self.LONGEST and re.fullmatch(r"[0-9]{1,6}", value) is None:
            raise ValidationError("Choose one of the lifetimes offered.")
        return value

    def cleaned_lifetime(self) -> dt.timedelta | None:
        value = self.cleaned_data["lifetime"]
        return None if value == self.LONGEST else dt.timedelta(days=int(value))
