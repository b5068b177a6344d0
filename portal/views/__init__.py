"""Pages of the tenancy domain."""
