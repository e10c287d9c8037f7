"""What both hops share, made once and handed to each (addons/bridge.py): the state (the
store of the chat hop's observations and the planner hop's ledger), the worker process for
large bodies, the work that waits until a request has gone upstream, and the flow metadata
both hops write."""

META = "bridge"  # flow.metadata key: what the bridge did with a flow; marks it handled (replays)
MARKER = ":warning:"  # flow.marked for a flow whose steps state a failure or that kept unobserved calls
