"""The DV-facing REST API: authentication, validation, problems and the OpenAPI document."""
