"""Dialect readers and writers: a request body in, a neutral history out, and back."""

from __future__ import annotations


class DialectError(ValueError):
    """The body is not a request of the dialect (wrong shape or types)."""
