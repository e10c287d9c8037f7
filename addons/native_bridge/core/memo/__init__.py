"""The per-conversation memo: a resumed conversation is rewritten from where it was last cut.

An agent resends its whole history on every turn, a round or two longer than the last
time. Reading, deciding and re-encoding all of it again costs far more than parsing it
(scripts/BENCH.md). The memo keeps, per conversation, the last request body and
everything the rewrite derived from it, with *marks*: cuts between two history items
where the derivation can be split. A later body that starts with exactly the same bytes
up to a mark reuses everything before the mark and reads, decides and writes only the
items after it.

Why this gives exactly the bytes a full rewrite gives:

* Same bytes, same values. A mark's offset is where its item ends in the body the client sent,
  in whatever style it wrote JSON (layout.py finds it in those bytes, never in a re-encoding); a
  new body equal up to that offset holds the same items before the mark, with the same types
  and key order. Only the rest of the new body is parsed, as ``[[rest]]``: one list in one list
  only when the rest is values and commas, so the body has one items array.
* Same decisions. A mark is *safe*: no call or result id before it appears after it. The
  new items must not reuse an id from before the mark either. Decisions depend on other
  items only through ids (truth rule 1), so each side decides as if alone.
* Same layout. Steps are in call order and placements in history order, so the new
  lists are the old prefix plus the new part; the reader, the writer (Anthropic merges
  neighbours across the cut) and delta_start carry their state across the cut.

Anything that does not fit (no entry, another config, a body whose items layout.py cannot place, an id
reused across the cut, bad JSON or shape after the cut) falls back to the full rewrite,
which then refills the memo. tests/test_memo.py checks memo and full rewrite agree on
generated sessions with edited, truncated and forked histories.

Entries and marks are never changed once made: a rewrite builds a new entry and swaps
it in, so a result may share (read-only) objects with earlier results.

Each entry keeps the body's other fields parsed (its *shell*: the tools, most often), so that a
body whose bytes after the items are the same again is parsed only from the cut to the items' end.

A *light* memo (observe mode) keeps of a conversation little more than its last body
(light.py).

The parts, one job each (this page holds no code: import each name from its module):

* entry.py: what is kept of a conversation (:class:`~.entry.Entry`) and where it may be cut
  (:class:`~.entry.Mark`);
* light.py: the light containers that stand in for an entry's lists in a light memo;
* store.py: the store (:class:`~.store.Memo`) and the search for the entry a body goes on from;
* fill.py: filling the memo after a full rewrite (the state at the cuts, the safe ones, the entry);
* resume.py: going on from a mark, in two halves (:func:`~.resume.begin`, :func:`~.resume.complete`).
"""
