"""The loopback demo's parts, run by scripts/demo.py: what it sends (inputs.py), how it reads the
planner's side (chat.py: the chat hop's before/after and the probes against the known gateway;
planner.py: the real gateway's sends through the planner hop; probe.py: the reference fix's probe
on both hops), a unary gRPC call as the gateway makes it (h2_client.py) and the tables it prints
(table.py)."""
