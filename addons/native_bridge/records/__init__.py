"""The records: the writer and its retention (writer.py), the planner hop's part of a record
and what its flows carry, read back (planner.py), a rewritten body as a patch of the original
(bodydiff.py), redaction on every path we write (redact.py). The format: RECORDS.md."""
