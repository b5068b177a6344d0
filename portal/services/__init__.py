"""Write paths of the tenancy domain, shared by views, API, admin and commands (STYLE §4)."""
