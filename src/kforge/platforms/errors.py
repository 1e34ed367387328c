"""The platforms' error, in a module of its own that imports nothing heavy: the command line names it before any
platform (or torch) is loaded."""

from __future__ import annotations


class PlatformError(RuntimeError):
    """The requested platform cannot be used here; the message is one line for the user."""
