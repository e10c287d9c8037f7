"""native_bridge: truthful tool history for Cascade planners.

Two pure layers and the mitmproxy addons around them:

- :mod:`native_bridge.core`: chat histories (dialects, neutral history, step kinds,
  exit status, builder, encoder). Pure: bytes in, a :class:`Rewrite` out.
- :mod:`native_bridge.cascade`: the planner's wire (gRPC and Connect framing, the
  ``additional_steps`` splice, step corrections, the per-cascade ledger). Pure.
- :mod:`native_bridge.chat_hop` and :mod:`native_bridge.planner_hop`: the two hops'
  mitmproxy addons, loaded through ``addons/bridge.py``; :mod:`native_bridge.runtime`:
  what both share (state, the one dispatch and its worker process, flow metadata); :mod:`native_bridge.records`:
  the records; :mod:`native_bridge.inspect`: views, commands, explain, offline replay.

The public surface is small: :func:`rewrite` for a chat body.
"""

from .core.pipeline import Config, Rewrite, rewrite

__all__ = ["Config", "Rewrite", "rewrite"]
