"""Looking at what the bridge did: readable steps and diffs (explain.py; the planner hop's flows:
planner_view.py; a WebSocket's client frames: websocket_view.py), mitmweb content views (view.py),
the bridge.* commands (commands.py), offline replay of a capture's two hops (replay/). The
top layer: it may read every other (addons/README.md, Layers)."""
