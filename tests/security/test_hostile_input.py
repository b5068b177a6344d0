"""Hostile input, case by case: each found on the production path (gunicorn, DEBUG off,
PostgreSQL); each now a clear 4xx, in the API's error format under ``/api/``.

Run on PostgreSQL (CI sets DATABASE_URL) for the NUL cases: SQLite stores NUL, PostgreSQL
answered a ``DataError`` (500) before the request limits existed.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import override_settings

from portal.models import Tenant

API_ROUTES_WITH_A_NAME = [
    "/api/v1/nodes/%00/",
    "/api/v1/devices/%00/pool/device/",
    "/api/v1/devices/gpu.nvidia.com/%00/device/",
    "/api/v1/device-classes/%00/",
    "/api/v1/resource-slices/%00/",
    "/api/v1/resource-claims/%00/x/",
    "/api/v1/claim-requests/%00/",
    "/api/v1/claim-requests/%00/release/",
    "/api/v1/tenants/%00/usage/",
    "/api/v1/tenants/%00/",
    "/api/v1/quotas/%00/",
    "/api/v1/audit-events/%00/",
    "/api/v1/mirror-status/%00/",
]
PAGES_WITH_A_NAME = [
    "/nodes/%00/",
    "/devices/%00/pool/device/",
    "/device-classes/%00/",
    "/claims/%00/x/",
    "/claims/team-a-dev/%00/",
    "/claims/requests/%00/",
    "/tenants/%00/",
]


def assert_api_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    error = response.json()["error"]
    assert error["status"] == status
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return error


@pytest.mark.django_db
@pytest.mark.parametrize("path", API_ROUTES_WITH_A_NAME)
def test_a_nul_byte_in_an_api_path_is_a_404_in_the_error_format(api_as, root, path):
    assert_api_error(api_as(root).get(path), 404, "not_found")


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES_WITH_A_NAME)
def test_a_nul_byte_in_a_page_path_is_the_portals_404_page(client_as, bob, path):
    response = client_as(bob).get(path)
    assert response.status_code == 404
    assert "text/html" in response["Content-Type"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/devices/?q=%00", "/api/v1/tenants/?namespace=a%00b"])
def test_a_nul_byte_in_a_query_is_a_400(api_as, bob, path):
    assert_api_error(api_as(bob).get(path), 400)


@pytest.mark.django_db
def test_an_overlong_name_is_a_404_without_a_query(api_as, bob, django_assert_num_queries):
    client = api_as(bob)
    with django_assert_num_queries(0):
        assert_api_error(client.get(f"/api/v1/nodes/{'n' * 254}/"), 404)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/tenants/", "/api/v1/quotas/"])
def test_json_nested_too_deeply_is_a_400_on_every_write(api_as, root, path):
    body = "[" * 5000 + "]" * 5000
    error = assert_api_error(
        api_as(root).post(path, body, content_type="application/json"), 400, "parse_error"
    )
    assert "deeper than 64" in error["message"]
    nested = {"name": "Deep", "description": json.loads("[" * 70 + "]" * 70)}
    assert_api_error(api_as(root).post(path, nested, format="json"), 400, "parse_error")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        {"name": "Team\u0000C"},
        {"name": "Team C", "slug": "team-\u0000"},
        {"name": "Team C", "namespaces": ["a\u0000"]},
        {"name": "\ud800"},
    ],
)
def test_unstorable_text_in_a_body_is_a_400(api_as, root, body):
    response = api_as(root).post(
        "/api/v1/tenants/", json.dumps(body), content_type="application/json"
    )
    assert_api_error(response, 400, "parse_error")


@pytest.mark.django_db
def test_unstorable_text_in_a_quota_is_a_400(api_as, root, team_a):
    body = {"tenant": "team-\u0000", "device_class_name": "gpu.nvidia.com\u0000"}
    assert_api_error(api_as(root).post("/api/v1/quotas/", body, format="json"), 400)


@pytest.mark.django_db
def test_many_repeats_of_a_parameter_are_a_400_in_the_error_format(api_as, client_as, bob):
    query = "&".join(["q=a"] * 1000)
    assert_api_error(api_as(bob).get(f"/api/v1/devices/?{query}"), 400, "bad_request")
    assert client_as(bob).get(f"/devices/?{query}").status_code == 400


@pytest.mark.django_db
def test_a_known_parameter_given_twice_is_a_400(api_as, bob):
    error = assert_api_error(api_as(bob).get("/api/v1/devices/?q=a&q=b"), 400, "invalid")
    assert error["fields"] == {"q": ["Give this parameter once."]}


@pytest.mark.django_db
def test_an_overlong_query_string_is_a_400(api_as, bob):
    assert_api_error(api_as(bob).get(f"/api/v1/devices/?q={'a' * 5000}"), 400, "bad_request")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "limit=null",
        "limit=-1",
        "limit=0",
        "limit=100000",
        "offset=null",
        "offset=-5",
        "offset=99999999999999999999",
        "ready=null",
        "ready=yes",
        "ordering=raw",
        "ordering=name,password",
    ],
)
def test_an_invalid_value_of_a_known_list_parameter_is_a_400(api_as, bob, query):
    error = assert_api_error(api_as(bob).get(f"/api/v1/nodes/?{query}"), 400, "invalid")
    assert query.split("=")[0] in error["fields"]


@pytest.mark.django_db
def test_valid_list_parameters_and_unknown_ones_are_accepted(api_as, bob, mirrored_cluster):
    client = api_as(bob)
    assert (
        client.get("/api/v1/nodes/?ready=true&limit=2&offset=1&ordering=-name").status_code == 200
    )
    assert client.get("/api/v1/nodes/?ready=&limit=&_=123").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("per_page", ["-1", "0", "100000", "null"])
def test_page_sizes_out_of_bounds_show_the_default_page(client_as, bob, per_page):
    assert client_as(bob).get(f"/devices/?per_page={per_page}").status_code == 200


@pytest.mark.django_db
def test_an_oversized_body_is_a_413_in_the_error_format(api_as, root):
    body = json.dumps({"name": "x" * (1024 * 1024)})
    response = api_as(root).post("/api/v1/tenants/", body, content_type="application/json")
    assert_api_error(response, 413, "request_too_large")


@pytest.mark.django_db
def test_paths_the_router_does_not_know_are_404s_in_the_error_format(api_as, bob, client):
    assert_api_error(api_as(bob).get("/api/v1/no-such-thing/"), 404, "not_found")
    assert_api_error(api_as(bob).get("/api/v2/"), 404, "not_found")
    assert_api_error(client.get("/api/nothing/"), 404, "not_found")


@pytest.mark.django_db
def test_methods_and_media_types_are_refused_in_the_error_format(api_as, root):
    assert_api_error(api_as(root).delete("/api/v1/me/"), 405, "method_not_allowed")
    response = api_as(root).post("/api/v1/tenants/", "name=x", content_type="text/plain")
    assert_api_error(response, 415, "unsupported_media_type")


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["state=bogus", "format=nonsense"])
def test_errors_of_the_export_are_json_before_streaming_starts(api_as, bob, query):
    response = api_as(bob).get(f"/api/v1/devices/export/?{query}")
    assert response.status_code in (400, 404)
    assert_api_error(response, response.status_code)


@pytest.mark.django_db
def test_the_export_without_credentials_is_a_401_in_the_error_format(client):
    assert_api_error(client.get("/api/v1/devices/export/"), 401, "not_authenticated")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name",
    [
        "Team\x1b[31mRed",  # an ANSI escape
        "Team\u202eC",  # a right-to-left override
        "Team\u2066C",  # a bidirectional isolate
        "Team\nC",  # a line break in a one-line name
        "Team\x07C",  # BEL
    ],
)
def test_names_with_control_or_bidi_characters_are_refused(api_as, root, name):
    response = api_as(root).post("/api/v1/tenants/", {"name": name}, format="json")
    error = assert_api_error(response, 400, "invalid")
    assert "control or bidirectional" in error["fields"]["name"][0]
    assert not Tenant.objects.filter(name=name).exists()


@pytest.mark.django_db
def test_a_description_may_have_lines_but_not_escapes_and_is_bounded(api_as, root):
    client = api_as(root)
    ok = client.post("/api/v1/tenants/", {"name": "C", "description": "a\nb"}, format="json")
    assert ok.status_code == 201, ok.content
    bad = {"name": "D", "description": "\x1b[2J"}
    assert_api_error(client.post("/api/v1/tenants/", bad, format="json"), 400, "invalid")
    long = {"name": "E", "description": "x" * 2001}
    assert_api_error(client.post("/api/v1/tenants/", long, format="json"), 400, "invalid")


@pytest.mark.django_db
def test_a_tenant_owns_at_most_100_namespaces(api_as, root):
    body = {"name": "Big", "namespaces": [f"ns-{i}" for i in range(50_000)]}
    error = assert_api_error(api_as(root).post("/api/v1/tenants/", body, format="json"), 400)
    assert "namespaces" in error["fields"]
    assert not Tenant.objects.filter(name="Big").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_lease", "-01:00:00"),
        ("max_lease", "00:00:00"),
        ("max_lease", "999999999 00:00:00"),
        ("max_lease", "3651 00:00:00"),
        ("max_devices", -1),
        ("max_devices", 2**63),
        ("device_class_name", "GPU\u202e.com"),
        ("device_class_name", "x" * 254),
    ],
)
def test_quota_limits_out_of_range_are_refused(api_as, root, team_a, field, value):
    body = {"tenant": "team-a", "device_class_name": "tpu.example.com", field: value}
    error = assert_api_error(api_as(root).post("/api/v1/quotas/", body, format="json"), 400)
    assert field in error["fields"]


@pytest.mark.django_db
def test_an_audit_event_without_a_tenant_says_null(api_as, root):
    from portal.services.audit import record_event

    record_event(actor=root, action="created", obj=root, before=None, after={"x": 1})
    events = api_as(root).get("/api/v1/audit-events/").json()["results"]
    assert events[0]["tenant"] is None


@pytest.mark.django_db
def test_a_user_over_the_rate_is_throttled_in_the_error_format(api_as, bob, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "3/minute", "anon": "3/minute"},
    }
    client = api_as(bob)
    for _ in range(3):
        assert client.get("/api/v1/me/").status_code == 200
    response = client.get("/api/v1/me/")
    assert_api_error(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0


@pytest.mark.django_db
def test_the_default_rates_leave_ordinary_use_alone(api_as, bob):
    client = api_as(bob)
    assert all(client.get("/api/v1/me/").status_code == 200 for _ in range(50))


@pytest.mark.django_db
def test_the_schema_generates_without_warnings_and_validates(tmp_path):
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "s.yml"))


@pytest.mark.django_db
def test_the_schema_documents_every_error_with_its_body(api_as, root):
    schema = api_as(root).get("/api/schema/?format=json").json()
    assert schema["components"]["schemas"]["AuditEvent"]["properties"]["tenant"]["nullable"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status in ("400", "401", "403", "404", "413", "429", "503"):
                response = operation["responses"][status]
                body = response["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/Error"}, (path, method, status)


@override_settings(DEBUG=False)
@pytest.mark.django_db
def test_a_server_error_under_the_api_is_in_the_error_format(api_as, bob, monkeypatch):
    from portal.api import views

    def explode(self, request):
        raise RuntimeError("boom")

    monkeypatch.setattr(views.CurrentUserView, "get", explode)
    client = api_as(bob)
    client.raise_request_exception = False
    assert_api_error(client.get("/api/v1/me/"), 500)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("since", "status"),
    [
        ("8768-11-11T07:34:13+17:05", 200),  # an offset PostgreSQL refuses: compared in UTC
        ("9999-12-31T23:59:59-05:00", 400),  # no UTC equivalent
        ("yesterday", 400),
    ],
)
def test_times_in_filters_are_compared_in_utc_or_refused(api_as, root, since, status):
    response = api_as(root).get("/api/v1/audit-events/", {"since": since})
    assert response.status_code == status, response.content
