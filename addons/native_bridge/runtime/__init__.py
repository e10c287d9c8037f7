"""What both hops share, made once and handed to each (addons/bridge.py): the state (the
store of the chat hop's observations and the planner hop's ledger), the one dispatch that
decides where and when each hop's work runs (on the loop, in the worker process or a thread,
before or after the request goes upstream) and fails it open, the flow metadata both hops
write, and the planner listeners' prior-knowledge HTTP/2 (h2c.py: the planner hop serves them,
the chat hop leaves them alone)."""

META = "bridge"  # flow.metadata key: what the bridge did with a flow; marks it handled (replays)
MARKER = ":warning:"  # flow.marked for a flow whose steps state a failure or that kept unobserved calls
