"""A render function for tests/test_renderer.py that never finishes in time (the worker imports it)."""

import time


def render(job: object) -> bytes:
    time.sleep(120)
    return b""
