"""The store's one error type: a user-readable line about the database."""


class StoreError(Exception):
    """The database cannot be opened or used as asked (wrong version, unknown id, not a database)."""
