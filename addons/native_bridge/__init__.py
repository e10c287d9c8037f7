"""native_bridge: truthful native tool history for Cascade planners.

Three packages, one per layer:

- :mod:`native_bridge.core`: chat histories (dialects, neutral history, step kinds,
  exit status, builder, encoder). Pure: bytes in, a :class:`Rewrite` out.
- :mod:`native_bridge.cascade`: the planner's wire (gRPC and Connect framing, the
  ``additional_steps`` splice, step corrections, the per-cascade ledger). Pure.
- :mod:`native_bridge.shell`: the mitmproxy addons, recorder, views and commands,
  loaded through ``addons/bridge.py``.

The public surface is small: :func:`rewrite` for a chat body.
"""

from .core.pipeline import Config, Rewrite, rewrite

__all__ = ["Config", "Rewrite", "rewrite"]
