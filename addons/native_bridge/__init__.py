"""native_bridge: truthful native tool history for Cascade-style planners.

The public surface is small: :func:`rewrite` (bytes in, a :class:`Rewrite` out),
and the mitmproxy addon :class:`native_bridge.addon.NativeBridge`, loaded through
``addons/bridge.py``.
"""

from .rewrite import Config, Rewrite, rewrite

__all__ = ["Config", "Rewrite", "rewrite"]
