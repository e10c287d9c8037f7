"""What the bridge knows of each client, as data: one table a module, each row with its source
(the client's repository and file, or the captured release it was read from).

The logic that reads the tables is beside them in core/ (clients.py, kinds.py, exitstatus.py);
nothing here imports from the rest of the package (tests/test_imports.py). CLIENTS.md and
EXIT_STATUS.md in this folder are generated from the tables (scripts/doc_tables.py --write,
checked by tests/test_readme.py).
"""
