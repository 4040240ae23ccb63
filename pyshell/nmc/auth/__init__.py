"""OAuth2 bearer verification, shared by the DV API and the operator console: the verifier
and its settings (bearer), the IAM's keys it checks against (jwks_cache), and its failures
typed by whose they are (errors)."""
