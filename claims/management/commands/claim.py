"""``manage.py claim``: self-service claim requests from a shell, as a named user.

Subcommands ``submit``, ``release``, ``renew`` and ``list``, each through the same input
serializer, gates and services as the API (``claims.api``, ``claims.access``,
``claims.requests.services``). Bad input is a :class:`CommandError` (exit status 2) naming each
field.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import Http404
from rest_framework.exceptions import ValidationError

from claims.access import get_request_for_user
from claims.api.inputs import ClaimInputSerializer, LeaseField
from claims.api.serializers import ClaimRequestSerializer
from claims.api.views import mirrored_claims
from claims.filtersets import ClaimRequestFilterSet
from claims.models import ClaimRequest
from claims.requests.services import QuotaExceeded, release_request, renew_request, submit_request
from claims.requests.specs import SpecErrors

USAGE_ERROR = 2


def _refused(errors: dict[str, Any]) -> CommandError:
    lines = [
        f"{field}: {' '.join(str(message) for message in _messages(problems))}"
        for field, problems in errors.items()
    ]
    return CommandError("\n".join(lines), returncode=USAGE_ERROR)


def _messages(problems: Any) -> list[str]:
    """Flattens DRF's nested error lists and dicts (alternatives, config) into sentences."""
    if isinstance(problems, dict):
        return [f"{key}: {m}" for key, value in problems.items() for m in _messages(value)]
    if isinstance(problems, list):
        return [m for item in problems for m in _messages(item)]
    return [str(problems)] if problems else []


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(f"{what}: not JSON ({error.msg}).", returncode=USAGE_ERROR) from None
    if not isinstance(value, dict):
        raise CommandError(f"{what}: expected a JSON object.", returncode=USAGE_ERROR)
    return value


def _alternative(text: str) -> dict[str, Any]:
    """``CLASS``, ``CLASS:COUNT`` or a JSON object ``{"device_class", "count", "selectors"}``."""
    if text.lstrip().startswith("{"):
        return _json_object(text, "--alternative")
    device_class, _, count = text.partition(":")
    return {"device_class": device_class, "count": count or 1}


class Command(BaseCommand):
    help = (
        "Submit, release, renew and list self-service claim requests as a user, through the "
        "same checks, quota lock and audit trail as the pages and the API."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="subcommand", required=True)

        submit = commands.add_parser("submit", help="Request devices (as POST /claim-requests/).")
        self._user(submit)
        submit.add_argument("--namespace", required=True)
        submit.add_argument("--name", required=True, help="The ResourceClaim's name.")
        submit.add_argument("--class", dest="device_class", required=True, help="DeviceClass.")
        submit.add_argument("--count", default="1", help="1 to 32, or All (default 1).")
        submit.add_argument(
            "--selector", dest="selectors", action="append", default=[], help="CEL; repeatable."
        )
        submit.add_argument(
            "--alternative",
            dest="alternatives",
            action="append",
            default=[],
            help='CLASS[:COUNT] or JSON {"device_class", "count", "selectors"}; repeatable, '
            "in order of preference.",
        )
        submit.add_argument("--constraint", default="", help="nvlink, pcie or numa.")
        submit.add_argument(
            "--match-attribute", dest="match_attributes", action="append", default=[]
        )
        submit.add_argument(
            "--distinct-attribute", dest="distinct_attributes", action="append", default=[]
        )
        submit.add_argument("--sharing", default="claim", help="claim (default) or template.")
        submit.add_argument(
            "--config",
            action="append",
            default=[],
            help='JSON {"driver": ..., "parameters": {...}}; repeatable.',
        )
        submit.add_argument("--admin-access", action="store_true")
        submit.add_argument(
            "--lease",
            help="P7D, 7d, 12h, ... (omitted: the longest needing no approval, else the quota's).",
        )
        submit.add_argument("--mode", default="", help="scheduler or reservation (portal admins).")
        submit.add_argument("--idempotency-key", default="")
        self._json(submit)

        release = commands.add_parser("release", help="Release a request's claim.")
        self._user(release)
        release.add_argument("id", help="The request's id.")
        release.add_argument("--force", action="store_true", help="Portal admins: even in use.")
        self._json(release)

        renew = commands.add_parser("renew", help="Start a request's lease again from now.")
        self._user(renew)
        renew.add_argument("id", help="The request's id.")
        renew.add_argument("--lease", help="The new lease (default: the request's own).")
        self._json(renew)

        listing = commands.add_parser("list", help="The requests the user can see.")
        self._user(listing)
        listing.add_argument("--state", choices=ClaimRequest.State.values)
        listing.add_argument("--namespace")
        listing.add_argument("--class", dest="device_class")
        listing.add_argument("--all", action="store_true", help="Ended requests too.")
        self._json(listing)

    @staticmethod
    def _user(parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="Act as this username.")

    @staticmethod
    def _json(parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the API's JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None or not user.is_active:
            raise CommandError(f"No active user {options['user']!r}.", returncode=USAGE_ERROR)
        handler = getattr(self, f"_{options['subcommand']}")
        try:
            handler(user, options)
        except SpecErrors as error:
            if isinstance(error, QuotaExceeded):
                room = error.check.room()
                error.errors["quota"] = [
                    *error.errors["quota"],
                    f"Would still fit: {room['devices']} devices, "
                    f"{room['memory_bytes']} bytes of memory, {room['claims']} claims "
                    "(None: unlimited).",
                ]
            raise _refused(error.errors) from None
        except Http404:
            raise CommandError(
                f"No claim request {options.get('id')!r} visible to {user.get_username()}.",
                returncode=USAGE_ERROR,
            ) from None
        except PermissionDenied as error:
            raise CommandError(str(error), returncode=USAGE_ERROR) from None

    def _print(self, requests: list[ClaimRequest], options: dict[str, Any]) -> None:
        if options["json"]:
            context = {"claims": mirrored_claims(requests)}
            data = ClaimRequestSerializer(requests, many=True, context=context).data
            self.stdout.write(json.dumps(data if options["subcommand"] == "list" else data[0]))
            return
        for request in requests:
            expires = request.expires_at.isoformat() if request.expires_at else "-"
            self.stdout.write(
                f"{request.pk}  {request.namespace}/{request.name}  {request.device_class_name}"
                f" x{request.count_label}  {request.state}  expires {expires}"
                + (f"  ({request.reason})" if request.reason else "")
            )

    def _submit(self, user: Any, options: dict[str, Any]) -> None:
        body = {
            "namespace": options["namespace"],
            "name": options["name"],
            "device_class": options["device_class"],
            "count": options["count"],
            "selectors": options["selectors"],
            "alternatives": [_alternative(text) for text in options["alternatives"]],
            "constraint": options["constraint"],
            "match_attributes": options["match_attributes"],
            "distinct_attributes": options["distinct_attributes"],
            "sharing": options["sharing"],
            "config": [_json_object(text, "--config") for text in options["config"]],
            "admin_access": options["admin_access"],
            "lease": options["lease"],
            "mode": options["mode"],
        }
        serializer = ClaimInputSerializer(data=body)
        if not serializer.is_valid():
            raise _refused(serializer.errors)
        request = submit_request(
            user=user, claim=serializer.claim_input(), idempotency_key=options["idempotency_key"]
        )
        request.refresh_from_db()
        self._print([request], options)

    def _release(self, user: Any, options: dict[str, Any]) -> None:
        request = get_request_for_user(user, options["id"], write=True)
        release_request(user=user, request=request, force=options["force"])
        request.refresh_from_db()
        self._print([request], options)

    def _renew(self, user: Any, options: dict[str, Any]) -> None:
        lease = None
        if options["lease"]:
            field = LeaseField()
            try:
                lease = field.run_validation(options["lease"])
            except ValidationError as error:
                raise _refused({"lease": error.detail}) from None
        request = get_request_for_user(user, options["id"], write=True)
        renew_request(user=user, request=request, lease=lease)
        request.refresh_from_db()
        self._print([request], options)

    def _list(self, user: Any, options: dict[str, Any]) -> None:
        requests = ClaimRequest.objects.visible_to(user).select_related("tenant", "requested_by")
        if not options["all"] and not options["state"]:
            requests = requests.active()
        filters = ClaimRequestFilterSet(
            {name: options[name] or "" for name in ("state", "namespace", "device_class")},
            queryset=requests,
        )
        if not filters.is_valid():
            raise _refused(filters.errors)
        self._print(list(filters.qs), options)
