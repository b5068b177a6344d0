"""Signing in: single sign-on with OpenID Connect beside local passwords (docs/sign-in.md)."""
