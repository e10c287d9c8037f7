"""Fuzz the bridge's core and addon with hostile request bodies, and check the truth rules on every one.

    .venv/bin/python scripts/fuzz --cases 100000            # the full run (a few minutes on 2 cores)
    .venv/bin/python scripts/fuzz --cases 2000 --seed 7      # a quick one
    .venv/bin/python scripts/fuzz --seed 7 --case 1234 --show   # one case again, in full

Every case is a valid history of one of the three dialects (Chat Completions, Anthropic
Messages, OpenAI Responses) built from a random seed, from one client (Claude Code or Codex
CLI with its tools and its words, sent with its User-Agent; or a client nobody can identify,
with any tools and no User-Agent), then damaged by 0 to 4 mutations:
wrong types at every level, null where a list is expected, deleted and duplicated items,
results moved before their calls, unparseable arguments, huge strings, deep nesting,
invalid UTF-8 and lone surrogates, enormous numbers of tool calls, another dialect's shape
or path, broken compression. Each case goes through the core (``rewrite``) and, for a
share of them, through the addon under mitmproxy's test context (``taddons``/``tflow``).

For every input: no exception escapes, and either the body was rewritten and the truth
rules hold, or it goes upstream byte-identical with a reason:

- conservation: every call and result of the input ends in exactly one place, a step or
  the rewritten history, read off the output bytes with a reader independent of the
  dialect modules; nothing outside the tool history changes;
- a step only for a pair correlated by id (one call, one result, result after call), and
  the step holds only that call's and that result's content;
- exit codes only from the result, never 0 (nor absent without a frame saying 0) for a
  result flagged is_error; one copy of the output (no ``stdout``);
- every step decodes strictly as a DONE ``CortexTrajectoryStep``; ``delta_start`` in range;
- the rewritten history stays valid for its dialect (no emptied messages, Anthropic
  alternation kept);
- determinism (same bytes twice) and idempotence (a rewritten body, or its history on
  its own, yields nothing new);
- addon: a body that is not rewritten leaves with the same bytes and headers, the flow says
  why, and its record renders in full with no planted secret in it.

A failure prints its case number, what broke and the command to see it again. Open bugs
that are already reported (``KNOWN``) are counted apart and do not fail the run unless
``--strict``; each has a strict xfail test in tests/test_fuzz.py.

The package: ``cases`` builds case N of a run (a seed from support.histories.seeds, damaged by
``mutations``; ``encoding`` writes a document at any depth), ``oracle`` checks the core's answer
and ``addon`` the addon's, ``runner`` runs the cases in worker processes and reports;
``__main__`` is the command line.
"""
