#!/usr/bin/env python
"""Django's command-line utility for DRA Portal."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    if sys.argv[1:2] == ["allocate"]:
        # The allocator needs no Django: skip django.setup() (most of a cold run's time).
        from claims.capacity.allocation_lines import run_without_django

        if run_without_django(sys.argv[2:]):
            return
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
