"""``manage.py claim``: the API's requests from a shell, through the same checks and services."""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from claims.models import ClaimRequest
from portal.models import AuditEvent, Quota

pytestmark = pytest.mark.django_db


def claim(*args: str) -> str:
    out = StringIO()
    call_command("claim", *args, stdout=out)
    return out.getvalue()


def submit(user: str, *extra: str) -> dict:
    return json.loads(
        claim(
            "submit",
            "--user",
            user,
            "--namespace",
            "gpu-test1",
            "--name",
            "one-h100",
            "--class",
            "gpu.nvidia.com",
            "--json",
            *extra,
        )
    )


def test_submit_records_a_request_as_the_user(live, bob):
    body = submit("bob", "--count", "2", "--lease", "3d", "--constraint", "pcie")
    request = ClaimRequest.objects.get(pk=body["id"])
    assert request.requested_by == bob
    assert request.held_devices == 2
    assert body["lease"] == "P3D"
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CLAIM_REQUESTED).count() == 1


def test_submit_takes_alternatives_and_config(live, bob):
    body = submit(
        "bob",
        "--alternative",
        "gpu.nvidia.com:All",
        "--config",
        '{"driver": "gpu.nvidia.com", "parameters": {"kind": "GpuConfig"}}',
    )
    assert body["form"]["alternatives"][0]["count"] == "All"
    assert body["spec"]["devices"]["config"][0]["opaque"]["driver"] == "gpu.nvidia.com"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (("--count", "33"), "count"),
        (("--selector", "device.attributes["), "selectors"),
        (("--lease", "forever"), "lease"),
        (("--admin-access",), "admin_access"),
        (("--config", "not json"), "--config"),
    ],
)
def test_bad_input_is_a_usage_error_naming_the_field(live, bob, extra, field):
    with pytest.raises(CommandError) as raised:
        submit("bob", *extra)
    assert raised.value.returncode == 2
    assert str(raised.value).startswith(field)
    assert not ClaimRequest.objects.exists()


def test_over_quota_says_what_would_still_fit(live, bob):
    with pytest.raises(CommandError) as raised:
        submit("bob", "--count", "9")
    assert raised.value.returncode == 2
    assert "would exceed the quota" in str(raised.value)
    assert "Would still fit:" in str(raised.value)


def test_an_unknown_user_is_a_usage_error(live):
    with pytest.raises(CommandError, match="No active user 'nobody'") as raised:
        claim("list", "--user", "nobody")
    assert raised.value.returncode == 2


def test_list_shows_the_users_tenants_requests_only(live, bob, carol):
    submit("bob")
    assert "gpu-test1/one-h100" in claim("list", "--user", "bob")
    assert claim("list", "--user", "carol") == ""
    assert (
        json.loads(claim("list", "--user", "bob", "--json", "--state", "submitted"))[0]["name"]
        == "one-h100"
    )


def test_release_and_renew_go_through_the_gate(live, bob, carol):
    request_id = submit("bob", "--lease", "1d")["id"]
    with pytest.raises(CommandError, match="No claim request"):
        claim("renew", request_id, "--user", "carol")
    Quota.objects.filter(device_class_name="gpu.nvidia.com").update(max_lease=dt.timedelta(days=7))
    with pytest.raises(CommandError, match="^lease: The longest lease"):
        claim("renew", request_id, "--user", "bob", "--lease", "P8D")
    renewed = json.loads(claim("renew", request_id, "--user", "bob", "--lease", "P2D", "--json"))
    assert renewed["lease"] == "P2D"
    released = json.loads(claim("release", request_id, "--user", "bob", "--json"))
    assert released["state"] == "releasing"
    with pytest.raises(CommandError, match="^state: ") as raised:
        claim("renew", request_id, "--user", "bob")
    assert raised.value.returncode == 2
