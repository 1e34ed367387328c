"""Pipelines: how proposers (agents, later the builtin engine) and the harness are put to work together."""
