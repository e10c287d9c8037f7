"""What the entry scripts in scripts/ and the tests share, importable as ``support``: the scripts
find it next to themselves, the tests through pytest's ``pythonpath`` (pyproject.toml).

- the stand-ins: ``reference_planner`` (a planner that validates the steps it receives),
  ``fake_language_server`` (the Windsurf language server), ``known_gateway`` (the known
  gateway's defective translation), ``mitmdump`` (a real mitmdump with the bridge);
- the rules every script follows: ``cli`` (its entry point), ``lifetime`` (its children end with it).

The programs among them are started through scripts/ (reference_planner.py,
fake_language_server.py); nothing here is an entry point of its own.
"""
