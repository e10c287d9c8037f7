"""Agent histories, generated: one place for every history the bench, the fuzzer, the demo and the
tests build, and what they share.

- ``agent``: realistic sessions from a seed, any size (the bench; tests that need large or many);
- ``seeds``: small valid histories with every hard case (the fuzzer's seeds, the soak);
- ``bundled``: the hand-written sessions bundled in tests/fixtures/sessions/, one per dialect;
- ``chat``, ``anthropic``, ``responses``: the items each dialect's histories are made of, as the
  generators above and the tests' own bodies (tests/chatkit.py) write them;
- ``cascade``: planner-hop bodies built like the gateway's.

Every generator is deterministic: the same seed (or script) gives the same bytes, which the
bench's golden digests, the bundled fixtures and the fuzzer's case numbers depend on.
"""

from __future__ import annotations

from collections.abc import Iterable

DIALECT_PATHS = {"chat": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}


def claude_read(lines: Iterable[str], start: int = 1) -> str:
    """Lines as Claude Code's Read tool shows them: right-aligned numbers and an arrow (non-ASCII)."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(lines, start))
