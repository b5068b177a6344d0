"""``dra-portal``: the DRA Portal from a terminal or a CI job (also ``kubectl dra-portal``).

The commands live by subject (:mod:`~dra_portal_cli.cluster`, :mod:`~dra_portal_cli.claims`,
:mod:`~dra_portal_cli.approvals`,
:mod:`~dra_portal_cli.tenancy`) on the one group of :mod:`~dra_portal_cli.app`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from dra_portal_cli import (  # noqa: F401 - they register their commands
    approvals,
    claims,
    cluster,
    tenancy,
)
from dra_portal_cli.app import cli, fail


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script.

    \b
    Examples:
      dra-portal completion bash > ~/.local/share/bash-completion/completions/dra-portal
      dra-portal completion zsh > "${fpath[1]}/_dra-portal"
    """
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    if completer is None:  # pragma: no cover - the choice above names only known shells
        fail(f"No completion for {shell}.")
    click.echo(completer(cli, {}, "dra-portal", "_DRA_PORTAL_COMPLETE").source())


def main() -> None:
    prog = "kubectl dra-portal" if Path(sys.argv[0]).name.startswith("kubectl-") else "dra-portal"
    try:
        cli.main(prog_name=prog)
    except KeyboardInterrupt:
        fail("Interrupted.", 130)
    except Exception as error:  # a bug of ours: one line, the traceback only when asked for
        if os.environ.get("DRA_PORTAL_DEBUG"):
            raise
        fail(
            f"Unexpected {type(error).__name__}: {error}. Run again with DRA_PORTAL_DEBUG=1 for "
            "the traceback, and please report it."
        )


if __name__ == "__main__":
    main()
