"""OAuth 2.1 resource-server authorization for the HTTP transports (bearer tokens, protected resource metadata)."""
