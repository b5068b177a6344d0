"""``approvals``: the requests and renewals that wait for a tenant admin, and the decision."""

from __future__ import annotations

import click

from dra_portal_cli.app import (
    Session,
    cli,
    list_options,
    output_option,
    pass_session,
    session_format,
)
from dra_portal_cli.claims import REQUEST_COLUMNS, claim_request_named, report_done
from dra_portal_cli.output import Column, emit, plain


@cli.group()
def approvals() -> None:
    """Requests waiting for a tenant admin's decision."""


@approvals.command("list")
@list_options
@output_option()
@pass_session
def approvals_list(
    session: Session, limit: int, fetch_all: bool, output_format: str | None
) -> None:
    """Requests and renewals waiting for approval in the tenants you administer.

    \b
    Example:
      dra-portal approvals list
    """
    found, count = session.client.claim_requests(
        limit=None if fetch_all else limit, awaiting_approval="true", ordering="created_at"
    )
    columns = [
        *REQUEST_COLUMNS[:5],
        Column("REQUESTED BY", lambda r: r.get("requested_by")),
        Column("WHY", lambda r: r.get("approval_reasons")),
        *REQUEST_COLUMNS[7:],
    ]
    emit(
        session_format(session, output_format),
        [dict(r) for r in found],
        columns,
        total=count,
        empty="Nothing waits for approval.",
    )


def _decide(
    session: Session,
    name: str,
    namespace: str | None,
    comment: str,
    approve: bool,
    output_format: str | None,
) -> None:
    request = claim_request_named(session, name, namespace)
    if approve:
        decided = plain(session.client.approve(str(request["id"]), comment=comment))
    else:
        decided = plain(session.client.deny(str(request["id"]), comment=comment))
    report_done(session, output_format, decided, "is")


@approvals.command("approve")
@click.argument("name")
@click.option("-n", "--namespace")
@click.option("--comment", default="", help="Why (optional).")
@output_option()
@pass_session
def approvals_approve(
    session: Session, name: str, namespace: str | None, comment: str, output_format: str | None
) -> None:
    """Approve a request (or its renewal).

    \b
    Example:
      dra-portal approvals approve big-run -n team-a-ci --comment "for the paper deadline"
    """
    _decide(session, name, namespace, comment, True, output_format)


@approvals.command("deny")
@click.argument("name")
@click.option("-n", "--namespace")
@click.option("--comment", required=True, help="Why (the requester reads it).")
@output_option()
@pass_session
def approvals_deny(
    session: Session, name: str, namespace: str | None, comment: str, output_format: str | None
) -> None:
    """Deny a request (or its renewal), saying why.

    \b
    Example:
      dra-portal approvals deny big-run -n team-a-ci --comment "use the A100s"
    """
    _decide(session, name, namespace, comment, False, output_format)
