"""Forms of the tenancy pages."""

from __future__ import annotations

import datetime as dt

from django import forms

__all__ = ["ApiTokenForm"]


class ApiTokenForm(forms.Form):
    LIFETIMES = [
        ("30", "30 days"),
        ("90", "90 days"),
        ("365", "1 year"),
        ("never", "Never expires"),
    ]

    name = forms.CharField(
        max_length=100, widget=forms.TextInput(attrs={"placeholder": "e.g. CI pipeline"})
    )
    lifetime = forms.ChoiceField(choices=LIFETIMES, initial="90", label="Expires after")

    def cleaned_lifetime(self) -> dt.timedelta | None:
        value = self.cleaned_data["lifetime"]
        return None if value == "never" else dt.timedelta(days=int(value))
