"""The sign-in facade: an authorization server in front of an upstream identity provider."""
