"""Forms of the notification pages."""

from __future__ import annotations

from django import forms

from notifications.models import Event

__all__ = ["PreferencesForm", "WebhookForm"]


class PreferencesForm(forms.Form):
    """One checkbox per event: email it to me or not (an unticked box is a no)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for event in Event:
            self.fields[event.value] = forms.BooleanField(
                required=False, label=event.label, help_text=event.description
            )

    def email_choices(self) -> dict[str, bool]:
        return {event.value: bool(self.cleaned_data.get(event.value)) for event in Event}


class WebhookForm(forms.Form):
    url = forms.CharField(
        label="Webhook URL",
        max_length=200,
        widget=forms.URLInput(attrs={"placeholder": "https://hooks.example.com/dra-portal"}),
    )
