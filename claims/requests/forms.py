"""The New claim form: the page's fields, mapped onto :class:`claims.requests.specs.ClaimInput`.

The form only parses (text → numbers, durations, JSON); every rule about what may be asked is
``claims.requests.services.prepare``'s, whose :class:`SpecErrors` come back onto the fields with
:meth:`ClaimRequestForm.add_spec_errors`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any, cast

from django import forms
from django.contrib.auth.models import AnonymousUser, User

from claims.models import ClaimRequest, ClassPolicy
from claims.requests.specs import MAX_COUNT, PRESETS, Alternative, ClaimInput
from devices.models import DeviceClass
from portal.models import Tenant, TenantNamespace
from toolkit.durations import DurationError, parse_duration

__all__ = ["ALTERNATIVE_ROWS", "ClaimRequestForm", "RenewForm"]

ALTERNATIVE_ROWS = 2
COUNT_CHOICES = [(str(n), str(n)) for n in range(1, MAX_COUNT + 1)] + [("All", "All")]
CONFIG_EXAMPLE = json.dumps(
    {
        "driver": "gpu.nvidia.com",
        "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "GpuConfig",
            "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}},
        },
    },
    indent=2,
)
# SpecErrors keys that are not form fields, and where their messages go.
ERROR_FIELDS = {"alternatives": "alt1_device_class", "quota": None, "spec": None, "mode": None}


def _names(text: str) -> tuple[str, ...]:
    return tuple(name for name in re.split(r"[\s,]+", text.strip()) if name)


def _lines(text: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def _count(text: str) -> int | None:
    """``All`` → None; a number stays as typed so that ``prepare`` names the range."""
    return None if text.strip().lower() == "all" else int(text)


class ClaimRequestForm(forms.Form):
    namespace = forms.ChoiceField()
    name = forms.CharField(
        max_length=253, widget=forms.TextInput(attrs={"placeholder": "e.g. training-run-1"})
    )
    device_class = forms.ChoiceField(label="Device class")
    count = forms.CharField(initial="1", widget=forms.Select(choices=COUNT_CHOICES))
    selectors = forms.CharField(
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 3,
                "placeholder": 'device.attributes["gpu.nvidia.com"].productName == '
                '"NVIDIA H100 80GB HBM3"',
            }
        ),
        help_text="CEL, one selector per line; a device must pass all of them.",
    )
    constraint = forms.ChoiceField(
        required=False,
        choices=[("", "None"), *((key, label) for key, (label, _) in PRESETS.items())],
        widget=forms.RadioSelect,
        label="Keep the devices together",
    )
    match_attributes = forms.CharField(
        required=False,
        label="Same value of",
        widget=forms.TextInput(attrs={"placeholder": "gpu.nvidia.com/productName"}),
        help_text="matchAttribute: qualified attribute names, space or comma separated.",
    )
    distinct_attributes = forms.CharField(
        required=False,
        label="Different values of",
        widget=forms.TextInput(attrs={"placeholder": "resource.kubernetes.io/pcieRoot"}),
        help_text="distinctAttribute: each device with its own value.",
    )
    sharing = forms.ChoiceField(
        choices=ClaimRequest.Sharing.choices,
        initial=ClaimRequest.Sharing.CLAIM,
        widget=forms.RadioSelect,
    )
    config = forms.CharField(
        required=False,
        label="Driver configuration",
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": CONFIG_EXAMPLE}),
        help_text='Opaque JSON for the driver: {"driver": …, "parameters": {…}}, or a list.',
    )
    admin_access = forms.BooleanField(
        required=False,
        label="Admin access (monitor devices in use; no device is held)",
    )
    lease = forms.CharField(
        required=False,
        max_length=40,
        widget=forms.TextInput(attrs={"placeholder": "e.g. 3d, 12h, P3D"}),
        help_text="Empty: the longest lease that needs no approval, else the longest the "
        "quota allows.",
    )
    idempotency_key = forms.CharField(required=False, widget=forms.HiddenInput, max_length=200)

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        *,
        user: User | AnonymousUser,
        **kwargs: Any,
    ) -> None:
        super().__init__(data, **kwargs)
        self.user = user
        offered = TenantNamespace.objects.select_related("tenant").order_by("name")
        if not user.is_staff:
            offered = offered.filter(tenant__in=Tenant.objects.visible_to(user))
        namespaces = list(offered)
        self.namespace_field.choices = [
            (namespace.name, f"{namespace.name} ({namespace.tenant.name})")
            for namespace in namespaces
        ]
        # The tenant of each namespace offered (the lease hint names its policy).
        self.namespace_tenants = {namespace.name: namespace.tenant for namespace in namespaces}
        modes = dict(ClassPolicy.objects.values_list("device_class_name", "mode"))
        self.class_modes = {
            name: modes.get(name, "scheduler")
            for name in DeviceClass.objects.order_by("name").values_list("name", flat=True)
        }
        # The form's copy of ``device_class``: a ChoiceField, as declared above.
        device_class_field = cast(forms.ChoiceField, self.fields["device_class"])
        device_class_field.choices = [
            (name, f"{name} · {mode}") for name, mode in self.class_modes.items()
        ]
        self.fields["idempotency_key"].initial = str(uuid.uuid4())
        for index in range(1, ALTERNATIVE_ROWS + 1):
            self.fields[f"alt{index}_device_class"] = forms.ChoiceField(
                required=False,
                label=f"Alternative {index}: device class",
                choices=[("", "—"), *device_class_field.choices],
            )
            self.fields[f"alt{index}_count"] = forms.CharField(
                required=False, initial="1", widget=forms.Select(choices=COUNT_CHOICES)
            )
            self.fields[f"alt{index}_selectors"] = forms.CharField(
                required=False, widget=forms.Textarea(attrs={"rows": 2})
            )
        if not user.is_staff:
            del self.fields["admin_access"]

    @property
    def namespace_field(self) -> forms.ChoiceField:
        """The form's copy of ``namespace``: a ChoiceField, as declared above."""
        return cast(forms.ChoiceField, self.fields["namespace"])

    # --- parsing ---------------------------------------------------------------------------

    def clean_count(self) -> str:
        value = self.cleaned_data["count"].strip()
        try:
            _count(value)
        except ValueError:
            raise forms.ValidationError(f"Ask for 1 to {MAX_COUNT} devices, or All.") from None
        return value

    def clean_lease(self) -> str:
        value = self.cleaned_data["lease"].strip()
        if value:
            try:
                parse_duration(value)
            except DurationError as error:
                raise forms.ValidationError(str(error)) from None
        return value

    def clean_config(self) -> list[dict[str, Any]]:
        text = self.cleaned_data["config"].strip()
        if not text:
            return []
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise forms.ValidationError(f"Not JSON: {error}") from None
        items = parsed if isinstance(parsed, list) else [parsed]
        if not all(isinstance(item, dict) for item in items):
            raise forms.ValidationError('Write {"driver": …, "parameters": {…}} or a list of them.')
        return items

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        for index in range(1, ALTERNATIVE_ROWS + 1):
            try:
                _count(cleaned.get(f"alt{index}_count") or "1")
            except ValueError:
                self.add_error(f"alt{index}_count", "A number, or All.")
        return cleaned

    def to_claim_input(self) -> ClaimInput:
        """The input as the services take it (call after ``is_valid()``)."""
        data = self.cleaned_data
        alternatives = tuple(
            Alternative(
                device_class_name=data[f"alt{index}_device_class"],
                count=_count(data.get(f"alt{index}_count") or "1"),
                selectors=_lines(data.get(f"alt{index}_selectors", "")),
            )
            for index in range(1, ALTERNATIVE_ROWS + 1)
            if data.get(f"alt{index}_device_class")
        )
        return ClaimInput(
            namespace=data["namespace"],
            name=data["name"].strip(),
            device_class_name=data["device_class"],
            count=_count(data["count"]),
            selectors=_lines(data.get("selectors", "")),
            alternatives=alternatives,
            constraint=data.get("constraint") or "",
            match_attributes=_names(data.get("match_attributes", "")),
            distinct_attributes=_names(data.get("distinct_attributes", "")),
            sharing=data.get("sharing") or "claim",
            config=tuple(data.get("config") or ()),
            admin_access=bool(data.get("admin_access")),
            lease=parse_duration(data["lease"]) if data.get("lease") else None,
        )

    def partial_claim_input(self) -> ClaimInput | None:
        """The input the preview checks while the form is incomplete: the fields that parse,
        defaults for the rest; None when not even a class is chosen."""
        self.is_valid()
        data = {**self.cleaned_data}
        raw = self.data
        if not (data.get("device_class") or raw.get("device_class")):
            return None
        for name, default in (
            ("namespace", raw.get("namespace", "")),
            ("name", raw.get("name", "")),
            ("device_class", raw.get("device_class", "")),
            ("count", "1"),
            ("lease", ""),
            ("config", []),
        ):
            data.setdefault(name, default)
        for index in range(1, ALTERNATIVE_ROWS + 1):
            data.setdefault(f"alt{index}_device_class", "")
        self.cleaned_data = data
        try:
            return self.to_claim_input()
        except (ValueError, DurationError):
            return None

    def add_spec_errors(self, errors: Mapping[str, list[str]]) -> None:
        """Show a :class:`SpecErrors`' messages on the fields they name."""
        for key, messages in errors.items():
            field = ERROR_FIELDS.get(key, key)
            if field is not None and field not in self.fields:
                field = None
            for message in messages:
                self.add_error(field, message)


class RenewForm(forms.Form):
    lease = forms.CharField(
        required=False,
        max_length=40,
        widget=forms.TextInput(attrs={"placeholder": "e.g. 7d"}),
        help_text="Empty: the claim's current lease.",
    )

    def clean_lease(self) -> str:
        value = self.cleaned_data["lease"].strip()
        if value:
            try:
                parse_duration(value)
            except DurationError as error:
                raise forms.ValidationError(str(error)) from None
        return value
