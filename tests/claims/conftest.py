"""Claims tests use the ``live`` fixture of ``tests/conftest.py`` (emulator + mirror)."""
