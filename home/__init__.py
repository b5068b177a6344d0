"""The top floor: the root URL map, the ``/api/v1/`` router, the dashboard home and the demo
command. It wires every app together, so nothing imports it."""
