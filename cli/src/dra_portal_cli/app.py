"""The ``dra-portal`` command group and what every command shares: the session (context,
output, the client), errors as one line and an exit code, sign-in and contexts.

Every command talks to the portal's REST API through :mod:`dra_portal_client` with the current
context's token (``login``), or ``DRA_PORTAL_SERVER``/``DRA_PORTAL_TOKEN``. Errors print the
API's message and field errors on one line each, never a traceback, and exit with a code per
kind (``EXIT_CODES``, also in ``dra-portal --help``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml

from dra_portal_cli import output
from dra_portal_cli.contexts import ContextError, Store
from dra_portal_cli.output import Column, emit
from dra_portal_client import (
    ApiError,
    AuthenticationFailed,
    Conflict,
    ConnectionFailed,
    NotFound,
    PermissionDenied,
    PortalClient,
    PortalError,
    Unavailable,
)

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECTION = 3
EXIT_AUTHENTICATION = 4
EXIT_PERMISSION = 5
EXIT_NOT_FOUND = 6
EXIT_CONFLICT = 7
EXIT_UNAVAILABLE = 8
EXIT_DOES_NOT_FIT = 9
EXIT_FAILED = 10
EXIT_DENIED = 11
EXIT_PENDING_APPROVAL = 12
EXIT_TIMED_OUT = 13
EXIT_ENDED = 14

EXIT_CODES = f"""\b
Exit codes:
  {EXIT_OK}   done (a claim: applied or in use)
  {EXIT_ERROR}   refused input or another error
  {EXIT_USAGE}   wrong command line
  {EXIT_CONNECTION}   cannot reach the portal (wrong server?)
  {EXIT_AUTHENTICATION}   not signed in, or the token is wrong, revoked or expired
  {EXIT_PERMISSION}   not allowed
  {EXIT_NOT_FOUND}   not found
  {EXIT_CONFLICT}   conflict (over quota, or the state forbids it)
  {EXIT_UNAVAILABLE}   the portal is busy or away (after retrying)
  {EXIT_DOES_NOT_FIT}   claim submit --dry-run: it would not fit now
  {EXIT_FAILED}  claim --wait: failed
  {EXIT_DENIED}  claim --wait: denied
  {EXIT_PENDING_APPROVAL}  claim --wait: still waiting for approval at --timeout
  {EXIT_TIMED_OUT}  claim --wait: still on its way at --timeout
  {EXIT_ENDED}  claim --wait: ended otherwise (withdrawn, released, expired)
"""

_EXIT_BY_ERROR: list[tuple[type[PortalError], int]] = [
    (ConnectionFailed, EXIT_CONNECTION),
    (AuthenticationFailed, EXIT_AUTHENTICATION),
    (PermissionDenied, EXIT_PERMISSION),
    (NotFound, EXIT_NOT_FOUND),
    (Conflict, EXIT_CONFLICT),
    (Unavailable, EXIT_UNAVAILABLE),
]


def fail(message: str, code: int = EXIT_ERROR, lines: list[str] | None = None) -> NoReturn:
    output.error_console.print(f"[bold red]error:[/] {message}", highlight=False)
    for line in lines or []:
        output.error_console.print(f"  {line}", highlight=False)
    sys.exit(code)


def _report(error: Exception) -> NoReturn:
    if isinstance(error, AuthenticationFailed):
        fail(f"{error.message} Sign in again: dra-portal login", EXIT_AUTHENTICATION)
    if isinstance(error, ApiError):
        lines = error.field_lines()
        problems = error.details.get("problems")
        if isinstance(problems, list):
            lines += [
                f"{problem.get('path') or '(document)'}: {problem.get('message')}"
                for problem in problems
                if isinstance(problem, dict)
            ]
        code = next((c for kind, c in _EXIT_BY_ERROR if isinstance(error, kind)), EXIT_ERROR)
        fail(error.message or error.code, code, [line for line in lines if line != error.message])
    if isinstance(error, ContextError):
        fail(str(error), EXIT_AUTHENTICATION)
    code = next((c for kind, c in _EXIT_BY_ERROR if isinstance(error, kind)), EXIT_ERROR)
    fail(str(error), code)


class PortalGroup(click.Group):
    """Turns the client's errors into one line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (PortalError, ContextError) as error:
            _report(error)


class Session:
    """The options every command shares, and the client made from them when first needed."""

    def __init__(self, context: str | None, output_format: str, timeout: float) -> None:
        self.context_name = context
        self.output = output_format
        self.timeout = timeout
        self._client: PortalClient | None = None

    @property
    def store(self) -> Store:
        return Store()

    @property
    def client(self) -> PortalClient:
        if self._client is None:
            context = self.store.resolve(self.context_name)
            if not context.token:
                raise ContextError(
                    f"No token for {context.server}: run `dra-portal login` (or set "
                    "DRA_PORTAL_TOKEN)."
                )
            self._client = PortalClient(context.server, context.token, timeout=self.timeout)
        return self._client


pass_session = click.make_pass_decorator(Session)


def output_option(choices: tuple[str, ...] = output.FORMATS) -> Callable[[Any], Any]:
    return click.option(
        "-o",
        "--output",
        "output_format",
        type=click.Choice(choices),
        default=None,
        help=f"How to print: {', '.join(choices)} (default table).",
    )


def list_options(function: Any) -> Any:
    function = click.option(
        "--all", "fetch_all", is_flag=True, help="Every page, not only the first --limit."
    )(function)
    return click.option(
        "--limit", type=click.IntRange(1, 100_000), default=50, show_default=True, help="How many."
    )(function)


def session_format(session: Session, given: str | None) -> str:
    return given or session.output


@click.group(
    cls=PortalGroup, epilog=EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--context",
    envvar="DRA_PORTAL_CONTEXT",
    help="A context from `login` (default: the current one).",
)
@click.option(
    "-o",
    "--output",
    "output_format",
    type=click.Choice(output.FORMATS),
    default="table",
    help="Default output of every command.",
)
@click.option(
    "--timeout", type=float, default=30.0, show_default=True, help="Seconds per HTTP call."
)
@click.version_option("0.1.0", prog_name="dra-portal")
@click.pass_context
def cli(ctx: click.Context, context: str | None, output_format: str, timeout: float) -> None:
    """DRA Portal from the command line: devices, nodes, claims, approvals, quotas and
    configuration as code.

    \b
    Examples:
      dra-portal login --server https://portal.example.com
      dra-portal devices list --class gpu.nvidia.com --state free
      dra-portal claim submit -n team-a-ci --name run-42 --class gpu.nvidia.com --count 2 --wait
      dra-portal apply -f tenants.yaml
    """
    ctx.obj = Session(context, output_format, timeout)


# --- sign-in ---------------------------------------------------------------------------------


@cli.command()
@click.option("--server", required=True, help="The portal's URL, e.g. https://portal.example.com.")
@click.option(
    "--token",
    envvar="DRA_PORTAL_TOKEN",
    help="An API token (Account → API tokens); also DRA_PORTAL_TOKEN; asked for when absent.",
)
@click.option("--token-stdin", is_flag=True, help="Read the token from standard input.")
@click.option(
    "--name", "context_name", default="default", show_default=True, help="The context's name."
)
@pass_session
def login(
    session: Session, server: str, token: str | None, token_stdin: bool, context_name: str
) -> None:
    """Sign in to a portal with an API token and remember it as a context.

    The token is checked against the portal before it is saved (in the user's config folder,
    readable only by you).

    \b
    Examples:
      dra-portal login --server https://portal.example.com
      echo "$TOKEN" | dra-portal login --server https://portal.example.com --token-stdin
      dra-portal login --server https://staging.example.com --name staging
    """
    if token_stdin:
        token = sys.stdin.readline().strip()
    if not token:
        token = click.prompt("API token", hide_input=True).strip()
    if not server.startswith(("http://", "https://")):
        fail(f"'{server}' is not a URL: write it with http:// or https://.", EXIT_USAGE)
    with PortalClient(server, token, timeout=session.timeout, retries=1) as client:
        user = client.me()
    session.store.put(context_name, server, token or "")
    output.console.print(
        f"Signed in to {server.rstrip('/')} as [bold]{user['username']}[/] "
        f"(context {context_name}).",
        highlight=False,
    )


@cli.command()
@click.argument("name", required=False)
@pass_session
def logout(session: Session, name: str | None) -> None:
    """Forget a context (default: the current one) and its token.

    \b
    Example:
      dra-portal logout staging
    """
    store = session.store
    target = name or store.current
    if not target:
        fail("No context to forget.")
    store.remove(target)
    output.console.print(f"Forgot context {target}.")


@cli.command()
@output_option()
@pass_session
def whoami(session: Session, output_format: str | None) -> None:
    """Who the token signs in as, and their tenants and roles.

    \b
    Examples:
      dra-portal whoami
      dra-portal --context staging whoami -o json
    """
    user = session.client.me()
    chosen = session_format(session, output_format)
    if chosen in ("json", "yaml"):
        emit(chosen, dict(user))
        return
    admin = " (portal admin)" if user.get("is_portal_admin") else ""
    output.console.print(
        f"[bold]{user['username']}[/]{admin} on {session.client.server}", highlight=False
    )
    emit(
        chosen,
        [dict(m) for m in user.get("memberships", [])],
        [Column("TENANT", lambda m: m["tenant"]), Column("ROLE", lambda m: m["role"])],
        empty="Member of no tenant.",
    )


@cli.group()
def contexts() -> None:
    """The contexts `login` saved."""


@contexts.command("list")
@pass_session
def contexts_list(session: Session) -> None:
    """Every context; * marks the current one.

    \b
    Example:
      dra-portal contexts list
    """
    store = session.store
    rows = [
        {
            "current": "*" if name == store.current else "",
            "name": name,
            "server": value.get("server"),
        }
        for name, value in sorted(store.contexts.items())
    ]
    emit(
        "table",
        rows,
        [
            Column("", lambda r: r["current"] or " "),
            Column("NAME", lambda r: r["name"]),
            Column("SERVER", lambda r: r["server"]),
        ],
        empty="No contexts: run `dra-portal login --server URL`.",
    )


@contexts.command("use")
@click.argument("name")
@pass_session
def contexts_use(session: Session, name: str) -> None:
    """Make NAME the current context.

    \b
    Example:
      dra-portal contexts use staging
    """
    session.store.use(name)
    output.console.print(f"Now using context {name}.")


def read_mapping(file: str, what: str) -> dict[str, Any]:
    """The one YAML/JSON mapping in ``file`` (``-``: standard input), or a usage error that
    says what is wrong and what it should hold (``what``)."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text()
    except OSError as error:
        fail(f"Cannot read {file}: {error.strerror}.", EXIT_USAGE)
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        fail(f"{file} is not valid YAML: {error}", EXIT_USAGE)
    if not isinstance(loaded, dict):
        fail(f"{file} must hold {what}.", EXIT_USAGE)
    return loaded
