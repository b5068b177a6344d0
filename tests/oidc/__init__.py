"""The test OpenID provider (panva's oidc-provider on Node) and its launcher."""
