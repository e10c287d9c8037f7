"""Looking at what the bridge did: readable steps and diffs (explain.py, planner_view.py),
mitmweb content views (view.py), the bridge.* commands (commands.py), offline replay of a
capture's planner calls (replay.py)."""
