"""Benchmark of the bridge, measured side by side against its floor and against plain mitmdump.

    .venv/bin/python scripts/bench            # the full bench (about thirty minutes)
    .venv/bin/python scripts/bench --quick    # seconds: the CI smoke (tests/test_bench_smoke.py)
    .venv/bin/python scripts/bench --only shapes,stall,planner

Every figure that decides a target is a ratio of two things measured in the same
run, interleaved, as medians: timings on a shared, noisy 2-core machine mean
little alone, their ratios are stable. See scripts/BENCH.md.

Sections:
  core    rewrite() of generated agent histories (3 dialects; single calls and 4
          parallel mixed calls per round; 10..10,000 rounds; outputs 1-5 KB) against
          the floor: orjson loads + dumps of the same body. Cold (first sight of
          the history) and warm (the conversation's previous turn was rewritten
          before: the steady state of an agent session). Peak memory per rewrite
          (tracemalloc) as a multiple of the body size. Scaling exponent.
  nohist  a request with no tool history: rewrite() against the floor.
  shapes  agent traffic through six mitmdumps in one run (plain, a naive orjson peer
          addon, the bridge in rewrite mode, in observe mode, observe with records,
          observe with bridge_state; the 200 KB and 2 MB agent loops also observe with
          bridge_state on a Redis server on loopback, one redis-server for the run):
          the same body again and again, the agent loop
          (each request the previous history plus one round, 40-turn conversations),
          new conversations, 8 conversations at once; 10 KB / 200 KB / 2 MB / 10 MB;
          the 200 KB, 2 MB and 10 MB loops also in each other JSON style clients write
          (python, go, pretty, mixed: support.histories.encodings);
          p50 and throughput vs plain. An agent loop and new conversations go turn by
          turn, each turn through every proxy in balanced orders (paired samples);
          --shape WORDS runs only the rows named (a whole label) or whose label holds
          them; with --quick, each of them short.
  stall   a 32 MB history never seen before while small requests run: their p99
          alone and during, and peak RSS growth of each proxy (worker included).
  loopmem peak memory in the agent loop (2 MB and 30 MB conversations), beyond each
          proxy's idle memory.
  planner the planner hop: grpcio -> mitmdump (prior-knowledge HTTP/2 listener) ->
          grpcio, plain (h2c listener only) against -s addons/bridge.py with
          bridge_planner, the ledger in memory, in SQLite and on a Redis server; a
          200 KB SendUserCascadeMessage, first and resumed turn, each call through
          every proxy in balanced orders (paired, as the agent loop).
  load    issue 38's load figure (about a minute): 16 Claude Code conversations at
          once through two chat hops (observe) and two stand-in gateways with the
          shim's planner hops, chat hop A in front of gateway B and B of A, all four
          sharing one store: a Redis server on loopback, and the same deployment
          with one SQLite file, rounds alternating. Observations that reached the
          planner hops (counted from the stand-in language servers' captures),
          failed requests, the chat requests' p50/p99 and the p99 ratio.
  e2e     (not in the default run) the older mitmdump cases: 10 KB / 200 KB / 2 MB,
          1 and 8 clients, a null addon; the CI smoke runs it with --quick.
  golden  the output of rewrite() is byte-identical to the reference path
          (protobuf encoder, no caches) over the bundled session and generated
          histories; --golden-save/--golden-check compare against stored digests.

The package, a module per section (``golden``, ``core`` for core and nohist, ``e2e``, ``shapes``,
``stall``, ``loopmem``, ``planner``, ``load``) over what they share: ``timing`` (interleaving, medians,
percentiles), ``proxies`` (the mitmdumps, the minimal planner upstream, the null and naive
addons, the client that times requests, the proxies' memory); ``targets`` holds every limit
and the table; ``cli`` the command line (``run``, ``main``), ``__main__`` its entry point. The
histories come from support.histories, shared with the tests, the fuzzer and the demo.
"""
