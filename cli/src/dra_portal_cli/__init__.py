"""The dra-portal command-line client (built on dra_portal_client)."""
