"""The mitmproxy shell: select flows, call the pure packages, annotate, record."""

META = "bridge"  # flow.metadata key: what the bridge did with a flow; marks it handled (replays)
MARKER = ":warning:"  # flow.marked for a flow whose steps state a failure or that kept unobserved calls
