"""``claim``: submit, follow, explain, release, renew and withdraw claim requests."""

from __future__ import annotations

import sys
import time
from typing import Any, get_args

import click

from dra_portal_cli import output
from dra_portal_cli.app import (
    EXIT_CONFLICT,
    EXIT_DENIED,
    EXIT_DOES_NOT_FIT,
    EXIT_ENDED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PENDING_APPROVAL,
    EXIT_TIMED_OUT,
    EXIT_USAGE,
    Session,
    cli,
    fail,
    list_options,
    output_option,
    pass_session,
    read_mapping,
    session_format,
)
from dra_portal_cli.output import Column, emit, plain
from dra_portal_client import PortalError
from dra_portal_client.models import TERMINAL_STATES, ClaimState

# --- claims ----------------------------------------------------------------------------------

REQUEST_COLUMNS = [
    Column("NAME", lambda r: r.get("name")),
    Column("NAMESPACE", lambda r: r.get("namespace")),
    Column("CLASS", lambda r: r.get("device_class")),
    Column("STATE", lambda r: r.get("state")),
    Column("DEVICES", lambda r: r.get("held_devices"), justify="right"),
    Column("NODE", lambda r: r.get("node")),
    Column("EXPIRES", lambda r: (r.get("expires_at") or "")[:16].replace("T", " ")),
    Column("ID", lambda r: r.get("id"), wide_only=True),
    Column("TENANT", lambda r: r.get("tenant"), wide_only=True),
    Column("MODE", lambda r: r.get("mode"), wide_only=True),
    Column("REASON", lambda r: r.get("reason"), wide_only=True),
]


@cli.group()
def claim() -> None:
    """Claim requests: submit, follow, release, renew."""


def _claim_body(file: str | None, flags: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if file:
        loaded = read_mapping(file, "one claim (a mapping: namespace, name, device_class, ...)")
        body.update(loaded)
    for key, value in flags.items():
        if value not in (None, (), ""):
            body[key] = list(value) if isinstance(value, tuple) else value
    for required in ("namespace", "name", "device_class"):
        if required not in body:
            flag = {"device_class": "--class"}.get(required, f"--{required}")
            fail(f"Missing {required}: give {flag} or put it in -f FILE.", EXIT_USAGE)
    return body


def _fit_report(report: dict[str, Any]) -> None:
    if report.get("fits"):
        devices_text = ", ".join(f"{d.get('device')}" for d in report.get("devices") or [])
        output.console.print(
            f"[green]Fits now[/] on {report.get('node') or 'the cluster'}: {devices_text or '-'} "
            f"(holds {report.get('held_devices')} device(s) of {report.get('tenant')}'s quota).",
            highlight=False,
        )
        if report.get("needs_approval"):
            output.console.print(
                "It would wait for approval: " + "; ".join(report.get("approval_reasons") or []),
                highlight=False,
            )
        return
    output.console.print("[yellow]Does not fit now.[/]")
    quota = report.get("quota") or {}
    for problem in quota.get("problems") or []:
        output.console.print(f"  quota: {problem}", highlight=False)
    if report.get("error"):
        output.console.print(f"  {report['error']}", highlight=False)
    _print_funnels(report.get("explanations") or [])


def _print_funnels(funnels: list[dict[str, Any]]) -> None:
    for funnel in funnels:
        counts = funnel.get("counts") or {}
        stages = " → ".join(f"{stage} {count}" for stage, count in counts.items())
        where = f" on {funnel['node']}" if funnel.get("node") else ""
        blocking = funnel.get("blockingStage")
        output.console.print(
            f"  request {funnel.get('request')}{where}: {stages}"
            + (f" (stopped at {blocking})" if blocking else ""),
            highlight=False,
        )
        for error in funnel.get("errors") or []:
            output.console.print(f"    {error}", highlight=False)


def _wait(session: Session, request: dict[str, Any], timeout: float, interval: float) -> int:
    """Follow a request until it settles; answers the exit code of how it ended."""
    quiet = session_format(session, None) in ("json", "yaml") or not sys.stderr.isatty()
    started = time.monotonic()

    def show(answer: Any) -> None:
        current = plain(answer)
        elapsed = time.monotonic() - started
        reason = f": {current['reason']}" if current.get("reason") else ""
        output.error_console.print(
            f"[{elapsed:5.1f}s] {current.get('namespace')}/{current.get('name')} is "
            f"{current.get('state')}{reason}",
            highlight=False,
        )

    if quiet:
        final = session.client.wait_for_claim(
            request["id"], timeout=timeout, interval=interval, on_change=show
        )
    else:
        with output.error_console.status("Waiting for the claim…"):
            final = session.client.wait_for_claim(
                request["id"], timeout=timeout, interval=interval, on_change=show
            )
    state = final.get("state")
    if state in ("applied", "in_use"):
        return EXIT_OK
    return {
        "failed": EXIT_FAILED,
        "denied": EXIT_DENIED,
        "pending_approval": EXIT_PENDING_APPROVAL,
        "withdrawn": EXIT_ENDED,
        "released": EXIT_ENDED,
        "expired": EXIT_ENDED,
    }.get(str(state), EXIT_TIMED_OUT)


@claim.command("submit")
@click.option(
    "-f",
    "--filename",
    "file",
    help="A claim as YAML or JSON (the New-claim page's input); - for stdin.",
)
@click.option("-n", "--namespace", help="One of your tenant's namespaces.")
@click.option("--name", help="The ResourceClaim's name.")
@click.option("--class", "device_class", help="The DeviceClass to draw devices from.")
@click.option("--count", help="How many devices: 1 to 32, or All.")
@click.option("--selector", "selectors", multiple=True, help="A CEL selector; repeat for more.")
@click.option("--lease", help="How long to hold it: 7d, 12h, P7D.")
@click.option(
    "--mode",
    type=click.Choice(["scheduler", "reservation"]),
    help="Portal admins: not the class's mode.",
)
@click.option("--sharing", help="claim (default), or a sharing preset of the class.")
@click.option(
    "--constraint", type=click.Choice(["nvlink", "pcie", "numa"]), help="Devices must share this."
)
@click.option(
    "--match-attribute", "match_attributes", multiple=True, help="An attribute all devices share."
)
@click.option(
    "--distinct-attribute",
    "distinct_attributes",
    multiple=True,
    help="An attribute all devices differ in.",
)
@click.option("--dry-run", is_flag=True, help="Would it fit now? Nothing is recorded.")
@click.option("--wait", is_flag=True, help="Follow it until applied, in use, failed or denied.")
@click.option(
    "--wait-timeout", type=float, default=600.0, show_default=True, help="Seconds --wait waits."
)
@click.option(
    "--interval", type=float, default=1.0, show_default=True, help="Seconds between polls."
)
@click.option(
    "--idempotency-key",
    default="",
    help="Retries with the same key make one request (default: a fresh key, which the CLI's "
    "own retries reuse).",
)
@output_option()
@pass_session
def claim_submit(
    session: Session,
    file: str | None,
    namespace: str | None,
    name: str | None,
    device_class: str | None,
    count: str | None,
    selectors: tuple[str, ...],
    lease: str | None,
    mode: str | None,
    sharing: str | None,
    constraint: str | None,
    match_attributes: tuple[str, ...],
    distinct_attributes: tuple[str, ...],
    dry_run: bool,
    wait: bool,
    wait_timeout: float,
    interval: float,
    idempotency_key: str,
    output_format: str | None,
) -> None:
    """Ask for devices, checked against your tenant's quota and the cluster.

    Flags override what -f FILE says. Without --wait the command returns once the portal has
    accepted the request (it may wait for approval: the state says so).

    \b
    Examples:
      dra-portal claim submit -n team-a-ci --name run-42 --class gpu.nvidia.com --count 2 --wait
      dra-portal claim submit -f claim.yaml --dry-run
      dra-portal claim submit -f claim.yaml --wait --wait-timeout 1800 -o json
    """
    number: Any = count
    if count is not None and count != "All":
        if not count.isdigit():
            fail(f"--count is a number from 1 to 32, or All; not '{count}'.", EXIT_USAGE)
        number = int(count)
    body = _claim_body(
        file,
        {
            "namespace": namespace,
            "name": name,
            "device_class": device_class,
            "count": number,
            "selectors": selectors,
            "lease": lease,
            "mode": mode,
            "sharing": sharing,
            "constraint": constraint,
            "match_attributes": match_attributes,
            "distinct_attributes": distinct_attributes,
        },
    )
    chosen = session_format(session, output_format)
    if dry_run:
        report = plain(session.client.would_it_fit(body))
        if chosen in ("json", "yaml"):
            emit(chosen, report)
        else:
            _fit_report(report)
        sys.exit(EXIT_OK if report.get("fits") else EXIT_DOES_NOT_FIT)
    request = plain(session.client.submit_claim(body, idempotency_key=idempotency_key))
    if chosen not in ("json", "yaml"):
        state = request.get("state")
        output.error_console.print(
            f"Submitted {request.get('namespace')}/{request.get('name')} "
            f"({request.get('id')}): {state}.",
            highlight=False,
        )
        if state == "pending_approval":
            output.error_console.print(
                "Waits for approval: " + "; ".join(request.get("approval_reasons") or []),
                highlight=False,
            )
    code = EXIT_OK
    if wait:
        code = _wait(session, request, wait_timeout, interval)
        request = plain(session.client.claim_request(str(request["id"])))
    if chosen in ("json", "yaml"):
        emit(chosen, request)
    elif wait:
        emit(chosen, request, REQUEST_COLUMNS)
    sys.exit(code)


@claim.command("list")
@click.option("-n", "--namespace", help="In this namespace.")
@click.option("--class", "device_class", help="Of this DeviceClass.")
@click.option(
    "--state",
    type=click.Choice(get_args(ClaimState)),
)
@click.option("-q", "--search", help="Search names.")
@list_options
@output_option()
@pass_session
def claim_list(
    session: Session,
    namespace: str | None,
    device_class: str | None,
    state: str | None,
    search: str | None,
    limit: int,
    fetch_all: bool,
    output_format: str | None,
) -> None:
    """Your tenants' claim requests, newest first.

    \b
    Examples:
      dra-portal claim list --state in_use
      dra-portal claim list -n team-a-ci -o wide
    """
    found, count = session.client.claim_requests(
        limit=None if fetch_all else limit,
        namespace=namespace,
        device_class=device_class,
        state=state,
        q=search,
        ordering="-created_at",
    )
    emit(
        session_format(session, output_format),
        [dict(r) for r in found],
        REQUEST_COLUMNS,
        total=count,
        empty="No claim requests.",
    )


def claim_request_named(session: Session, name: str, namespace: str | None) -> dict[str, Any]:
    return plain(session.client.find_claim_request(name, namespace))


@claim.command("get")
@click.argument("name")
@click.option("-n", "--namespace", help="Where NAME is (when several namespaces have one).")
@output_option()
@pass_session
def claim_get(
    session: Session, name: str, namespace: str | None, output_format: str | None
) -> None:
    """One claim request, by name (the newest of that name) or id.

    \b
    Example:
      dra-portal claim get run-42 -n team-a-ci -o yaml
    """
    request = claim_request_named(session, name, namespace)
    chosen = session_format(session, output_format)
    emit("wide" if chosen == "table" else chosen, request, REQUEST_COLUMNS)
    if chosen in ("table", "wide"):
        for device in request.get("devices") or []:
            output.console.print(
                f"  device {device.get('driver')}/{device.get('pool')}/{device.get('device')}",
                highlight=False,
            )
        for reason in request.get("approval_reasons") or []:
            output.console.print(f"  waits for approval: {reason}", highlight=False)


@claim.command("release")
@click.argument("name")
@click.option("-n", "--namespace")
@click.option("--force", is_flag=True, help="Portal admins: release even while pods use it.")
@output_option()
@pass_session
def claim_release(
    session: Session, name: str, namespace: str | None, force: bool, output_format: str | None
) -> None:
    """Give the devices back (a request waiting for approval is withdrawn). Safe to repeat.

    \b
    Example:
      dra-portal claim release run-42 -n team-a-ci
    """
    request = claim_request_named(session, name, namespace)
    released = plain(session.client.release(str(request["id"]), force=force))
    report_done(session, output_format, released, "is")


@claim.command("withdraw")
@click.argument("name")
@click.option("-n", "--namespace")
@output_option()
@pass_session
def claim_withdraw(
    session: Session, name: str, namespace: str | None, output_format: str | None
) -> None:
    """Withdraw a request that waits for approval (nothing was applied).

    \b
    Example:
      dra-portal claim withdraw big-run -n team-a-ci
    """
    request = claim_request_named(session, name, namespace)
    state = request.get("state")
    if state != "pending_approval":
        where = f"{request.get('namespace')}/{request.get('name')}"
        advice = (
            "it has ended" if state in TERMINAL_STATES else "release it instead (claim release)"
        )
        fail(f"{where} is {state}, not waiting for approval: {advice}.", EXIT_CONFLICT)
    withdrawn = plain(session.client.release(str(request["id"])))
    report_done(session, output_format, withdrawn, "is")


@claim.command("renew")
@click.argument("name")
@click.option("-n", "--namespace")
@click.option("--lease", help="The new lease from now (default: the request's own).")
@output_option()
@pass_session
def claim_renew(
    session: Session, name: str, namespace: str | None, lease: str | None, output_format: str | None
) -> None:
    """Extend a claim's lease (it may wait for approval, like the request did).

    \b
    Example:
      dra-portal claim renew run-42 -n team-a-ci --lease 2d
    """
    request = claim_request_named(session, name, namespace)
    renewed = plain(session.client.renew(str(request["id"]), lease=lease))
    report_done(session, output_format, renewed, "expires")


def report_done(
    session: Session, output_format: str | None, request: dict[str, Any], what: str
) -> None:
    chosen = session_format(session, output_format)
    if chosen in ("json", "yaml"):
        emit(chosen, request)
        return
    where = f"{request.get('namespace')}/{request.get('name')}"
    if what == "expires":
        renewal = request.get("renewal") or {}
        if renewal.get("state") == "pending" or renewal.get("pending"):
            output.console.print(f"{where}: the renewal waits for approval.", highlight=False)
        else:
            output.console.print(f"{where} expires {request.get('expires_at')}.", highlight=False)
        return
    output.console.print(f"{where} is {request.get('state')}.", highlight=False)


@claim.command("why")
@click.argument("name")
@click.option("-n", "--namespace", help="The claim's namespace.")
@output_option()
@pass_session
def claim_why(
    session: Session, name: str, namespace: str | None, output_format: str | None
) -> None:
    """Why a claim is not allocated: the allocator's funnel per request, or why its request
    waits (approval) or failed.

    NAME is a claim request (name or id) or, with -n, any ResourceClaim you can see.

    \b
    Examples:
      dra-portal claim why run-42 -n team-a-ci
      dra-portal claim why pod-5f7d-gpu -n team-a-ci -o json
    """
    chosen = session_format(session, output_format)
    request: dict[str, Any] | None = None
    try:
        request = claim_request_named(session, name, namespace)
    except PortalError:
        if not namespace:
            raise
    if request is not None:
        namespace, name = str(request["namespace"]), str(request["name"])
        state = request.get("state")
        if state in ("pending_approval", "failed", "denied", "submitted", "allocating"):
            if chosen in ("json", "yaml"):
                emit(chosen, request)
                return
            text = {
                "pending_approval": "waits for approval: "
                + "; ".join(request.get("approval_reasons") or []),
                "failed": f"failed: {request.get('reason') or 'no reason given'}",
                "denied": "was denied: "
                + str(request.get("decision_comment") or request.get("reason") or ""),
                "submitted": "is queued for the allocator.",
                "allocating": "is being allocated now.",
            }[str(state)]
            output.console.print(f"{namespace}/{name} {text}", highlight=False)
            return
    assert namespace is not None
    why = plain(session.client.why_pending(namespace, name))
    if chosen in ("json", "yaml"):
        emit(chosen, why)
        return
    if not why.get("pending"):
        output.console.print(
            f"{namespace}/{name} is not pending (allocated, or being deleted).", highlight=False
        )
        return
    if why.get("fits"):
        output.console.print(
            f"{namespace}/{name} would fit now on {why.get('node')}: the scheduler places it "
            "when a pod that uses it is scheduled.",
            highlight=False,
        )
        return
    output.console.print(f"{namespace}/{name} does not fit now.", highlight=False)
    if why.get("error"):
        output.console.print(f"  {why['error']}", highlight=False)
    _print_funnels(why.get("funnels") or [])
    for hint in why.get("hints") or []:
        output.console.print(f"  hint: {hint}", highlight=False)
