"""``usage``, ``quotas``, ``report``, ``audit`` and configuration as code (``apply``, ``diff``,
``export``)."""

from __future__ import annotations

from typing import Any

import click

from dra_portal_cli import output
from dra_portal_cli.app import (
    Session,
    cli,
    fail,
    list_options,
    output_option,
    pass_session,
    read_mapping,
    session_format,
)
from dra_portal_cli.output import Column, bytes_text, emit, plain

# --- tenancy ---------------------------------------------------------------------------------


def _tenants(session: Session, tenant: str | None) -> list[str]:
    if tenant:
        return [tenant]
    slugs = [m["tenant"] for m in session.client.me().get("memberships", [])]
    if not slugs:
        fail("You are a member of no tenant: name one with --tenant.")
    return slugs


def _limit_text(used: Any, limit: Any, as_bytes: bool = False) -> str:
    show = bytes_text if as_bytes else str
    return f"{show(used)} / {show(limit) if limit is not None else '∞'}"


@cli.command()
@click.option("--tenant", help="A tenant's slug (default: each of yours).")
@output_option()
@pass_session
def usage(session: Session, tenant: str | None, output_format: str | None) -> None:
    """What your tenants hold against their quotas, per device class.

    \b
    Example:
      dra-portal usage --tenant team-a
    """
    chosen = session_format(session, output_format)
    answers = [session.client.tenant_usage(slug) for slug in _tenants(session, tenant)]
    if chosen in ("json", "yaml"):
        emit(chosen, answers if len(answers) > 1 else answers[0])
        return
    rows = [{"tenant": a["tenant"], **c} for a in answers for c in a.get("classes", [])]
    emit(
        chosen,
        rows,
        [
            Column("TENANT", lambda r: r["tenant"]),
            Column("CLASS", lambda r: r["device_class"]),
            Column(
                "DEVICES",
                lambda r: _limit_text(
                    r["used"]["devices"], (r.get("limit") or {}).get("max_devices")
                ),
            ),
            Column(
                "MEMORY",
                lambda r: _limit_text(
                    r["used"]["memory_bytes"], (r.get("limit") or {}).get("max_device_memory"), True
                ),
            ),
            Column(
                "CLAIMS",
                lambda r: _limit_text(
                    r["used"]["claims"], (r.get("limit") or {}).get("max_claims")
                ),
            ),
            Column("IN FLIGHT", lambda r: r["in_flight"]["devices"], justify="right"),
            Column(
                "ROOM",
                lambda r: "∞" if r["room"]["devices"] is None else r["room"]["devices"],
                justify="right",
            ),
        ],
        empty="No usage and no quotas.",
    )


@cli.group()
def quotas() -> None:
    """Quotas per tenant and device class."""


@quotas.command("get")
@click.option("--tenant", help="A tenant's slug (default: every tenant you can see).")
@output_option()
@pass_session
def quotas_get(session: Session, tenant: str | None, output_format: str | None) -> None:
    """The quotas: limits and approval thresholds (blank: unlimited).

    \b
    Example:
      dra-portal quotas get --tenant team-a
    """
    found = session.client.quotas(tenant=tenant)
    emit(
        session_format(session, output_format),
        found,
        [
            Column("TENANT", lambda q: q.get("tenant")),
            Column("CLASS", lambda q: q.get("device_class_name")),
            Column("MAX DEVICES", lambda q: q.get("max_devices"), justify="right"),
            Column("MAX MEMORY", lambda q: q.get("max_device_memory"), justify="right"),
            Column("MAX CLAIMS", lambda q: q.get("max_claims"), justify="right"),
            Column("MAX LEASE", lambda q: q.get("max_lease")),
            Column(
                "APPROVE ABOVE",
                lambda q: ", ".join(
                    text
                    for text in (
                        f"{q['approve_above_devices']} devices"
                        if q.get("approve_above_devices") is not None
                        else "",
                        f"{q['approve_above_memory']} memory"
                        if q.get("approve_above_memory") is not None
                        else "",
                        f"lease {q['approve_above_lease']}" if q.get("approve_above_lease") else "",
                        "over quota" if q.get("approve_over_quota") else "",
                    )
                    if text
                ),
            ),
            Column("IN CLUSTER", lambda q: q.get("device_class_in_cluster"), wide_only=True),
        ],
        empty="No quotas.",
    )


@cli.group()
def report() -> None:
    """Reports."""


@report.command("allocation-hours")
@click.option(
    "--period",
    type=click.Choice(["last-7-days", "last-30-days", "this-month", "last-month", "custom"]),
    default="last-30-days",
    show_default=True,
)
@click.option("--from", "start", help="With --period custom: the first day (YYYY-MM-DD).")
@click.option("--to", "end", help="With --period custom: the last day (YYYY-MM-DD).")
@click.option(
    "--group-by",
    type=click.Choice(["tenant", "namespace", "device_class", "model"]),
    default="tenant",
    show_default=True,
)
@output_option(("table", "csv", "json", "yaml"))
@pass_session
def report_allocation_hours(
    session: Session,
    period: str,
    start: str | None,
    end: str | None,
    group_by: str,
    output_format: str | None,
) -> None:
    """Device-hours and memory-hours held per tenant, namespace, class or model.

    \b
    Examples:
      dra-portal report allocation-hours --period last-month
      dra-portal report allocation-hours --period custom --from 2026-11-01 --to 2026-11-30 -o csv
    """
    answer = session.client.allocation_hours(
        period=period, group_by=group_by, **{"from": start, "to": end}
    )
    chosen = output_format or ("table" if session.output == "wide" else session.output)
    if chosen in ("json", "yaml"):
        emit(chosen, answer)
        return
    if chosen == "table":
        output.console.print(
            f"{answer.get('period_start', '')[:10]} to {answer.get('period_end', '')[:10]} "
            f"(end excluded), by {group_by}",
            highlight=False,
        )
    emit(
        chosen,
        answer.get("rows", []),
        [
            Column(group_by.upper().replace("_", " "), lambda r: r.get("group")),
            Column("NAME", lambda r: r.get("label")),
            Column("DEVICE HOURS", lambda r: f"{r.get('device_hours', 0):.1f}", justify="right"),
            Column(
                "MEMORY GIB HOURS", lambda r: f"{r.get('memory_gib_hours', 0):.1f}", justify="right"
            ),
            Column("ALLOCATIONS", lambda r: r.get("allocations"), justify="right"),
        ],
        empty="Nothing was held in this period.",
    )


@cli.group()
def audit() -> None:
    """The audit trail."""


@audit.command("list")
@click.option("--since", help="From this date (YYYY-MM-DD) or ISO 8601 time.")
@click.option("--until", help="To this date or time.")
@click.option("--tenant", help="A tenant's slug.")
@click.option("--actor", help="Who did it (username).")
@click.option("--action", help="created, updated, deleted, claim_requested, ...")
@list_options
@output_option()
@pass_session
def audit_list(
    session: Session,
    since: str | None,
    until: str | None,
    tenant: str | None,
    actor: str | None,
    action: str | None,
    limit: int,
    fetch_all: bool,
    output_format: str | None,
) -> None:
    """Audit events, newest first (portal admins: all; tenant admins: their tenants').

    \b
    Example:
      dra-portal audit list --since 2026-12-01 --tenant team-a
    """
    found, count = session.client.audit_events(
        limit=None if fetch_all else limit,
        since=since,
        until=until,
        tenant=tenant,
        actor=actor,
        action=action,
    )
    emit(
        session_format(session, output_format),
        found,
        [
            Column("TIME", lambda e: (e.get("created_at") or "")[:19].replace("T", " ")),
            Column("ACTOR", lambda e: e.get("actor_name") or "system"),
            Column("ACTION", lambda e: e.get("action")),
            Column("TENANT", lambda e: e.get("tenant")),
            Column("OBJECT", lambda e: f"{e.get('object_type')} {e.get('object_repr')}"),
        ],
        total=count,
        empty="No audit events.",
    )


# --- configuration as code -------------------------------------------------------------------


def _print_plan(changes: list[dict[str, Any]]) -> None:
    marks = {"create": "[green]+[/]", "update": "[yellow]~[/]", "delete": "[red]-[/]"}
    for change in changes:
        where = (
            change["name"]
            if change["kind"] == "tenant" or not change["tenant"]
            else f"{change['tenant']}/{change['name']}"
        )
        values = change.get("values") or {}
        detail = ", ".join(
            f"{key} {value.get('before')!s} → {value.get('after')!s}"
            if change["op"] == "update"
            else f"{key}={value.get('after') if change['op'] == 'create' else value.get('before')}"
            for key, value in values.items()
        )
        output.console.print(
            f"{marks[change['op']]} {change['kind']} {where}" + (f" ({detail})" if detail else ""),
            highlight=False,
        )


def _configure(
    session: Session, file: str, prune: bool, dry_run: bool, output_format: str | None
) -> None:
    outcome = plain(
        session.client.apply_configuration(
            read_mapping(file, "one configuration document (apiVersion, kind, tenants)"),
            prune=prune,
            dry_run=dry_run,
        )
    )
    chosen = session_format(session, output_format)
    if chosen in ("json", "yaml"):
        emit(chosen, outcome)
        return
    changes = outcome.get("changes") or []
    if not changes:
        output.console.print("No changes: the portal already matches the document.")
        return
    _print_plan(changes)
    verb = "Applied" if outcome.get("applied") else "Would apply"
    output.console.print(f"{verb} {len(changes)} change(s).")


@cli.command()
@click.option(
    "-f",
    "--filename",
    "file",
    required=True,
    help="The configuration document (YAML or JSON); - for stdin.",
)
@click.option("--prune", is_flag=True, help="Also remove what the document does not name.")
@click.option("--dry-run", is_flag=True, help="Show the plan only (same as `diff`).")
@output_option()
@pass_session
def apply(
    session: Session, file: str, prune: bool, dry_run: bool, output_format: str | None
) -> None:
    """Make the portal's tenants, namespaces, members and quotas what the document declares,
    in one transaction (portal admins). Applying it again changes nothing.

    \b
    Examples:
      dra-portal diff -f tenants.yaml
      dra-portal apply -f tenants.yaml
      dra-portal apply -f tenants.yaml --prune
    """
    _configure(session, file, prune, dry_run, output_format)


@cli.command()
@click.option(
    "-f", "--filename", "file", required=True, help="The configuration document; - for stdin."
)
@click.option("--prune", is_flag=True, help="Include the removals --prune would make.")
@output_option()
@pass_session
def diff(session: Session, file: str, prune: bool, output_format: str | None) -> None:
    """What `apply -f` would change, changing nothing (also `plan`).

    \b
    Example:
      dra-portal diff -f tenants.yaml --prune
    """
    _configure(session, file, prune, True, output_format)


cli.add_command(diff, name="plan")


@cli.command()
@output_option(("yaml", "json"))
@pass_session
def export(session: Session, output_format: str | None) -> None:
    """Print the portal's tenancy as a configuration document (portal admins): the start of
    the file to keep in git.

    \b
    Example:
      dra-portal export > tenants.yaml
    """
    emit(output_format or "yaml", session.client.configuration())
