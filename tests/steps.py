"""Loop steps for the tests that drive the hooks on an event loop of their own."""

from __future__ import annotations

import asyncio


async def gone() -> None:
    """Let the loop take the steps mitmdump takes to write a request out after its hook
    (runtime/later.after_forward): what the bridge put off until then has run."""
    for _ in range(2):
        await asyncio.sleep(0)
