"""What the entry scripts in scripts/ and the tests share, importable as ``support``: the scripts
find it next to themselves, the tests through pytest's ``pythonpath`` (pyproject.toml).

- the stand-ins: ``reference_planner`` (a planner that validates the steps it receives),
  ``fake_language_server`` (the Windsurf language server), ``known_gateway`` (the known
  gateway's defective translation), ``standin_gateway`` (the known gateway as a process: it
  spawns its language server and sends that translation over gRPC), ``mitmdump`` (a real
  mitmdump with the bridge);
- the rules every script follows: ``cli`` (its entry point), ``lifetime`` (its children end with it).
- the scripts' own parts: ``demo`` (the loopback demo's inputs, reports and probes),
  ``real_gateway`` (the real-gateway run's settings, state directory, namespace side and report).
- the shared store's infrastructure, for the tests: ``redis_server`` (a real redis-server: a free
  port, a random password, TLS with a throwaway CA from ``certs``; pause, restart), ``hosts`` (real
  hosts as network namespaces on a private switch), ``launcher`` (children forked from one
  long-lived thread, so that they end with this process).

The programs among them are started through scripts/ (reference_planner.py,
fake_language_server.py, standin_gateway.py); ``python -m support.standin_gateway`` (with
scripts/ on the path) runs the stand-in gateway too, for container images without the
entry scripts.
"""
