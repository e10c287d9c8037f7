"""golden: the optimised paths give the bytes the reference path gives.

Every case (the bundled sessions, generated histories and their hard-case variants) is
rewritten with no memo and through one shared memo; ``--golden-save``/``--golden-check`` keep
the digests of every outcome, to prove an optimisation changed no output byte.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from typing import Any

import orjson
from native_bridge.core.pipeline import rewrite
from support.histories import DIALECT_PATHS
from support.histories.agent import Session, mutations, no_history_doc
from support.histories.bundled import SESSION, SESSIONS, session_dialect


def golden_cases(quick: bool = False) -> Iterator[tuple[str, bytes, str | None, Any]]:
    """(name, raw body, path, config) over the bundled session and generated histories."""
    from native_bridge.core.pipeline import Config

    for path in SESSIONS:
        dialect = session_dialect(path)
        yield path.stem, path.read_bytes(), DIALECT_PATHS[dialect], None
    raw = SESSION.read_bytes()
    yield "session", raw, DIALECT_PATHS["chat"], None
    yield "session-nopath", raw, None, None
    yield "session-kinds", raw, DIALECT_PATHS["chat"], Config(kinds=frozenset({"run_command", "view_file"}))
    yield "session-ascii", json.dumps(orjson.loads(raw)).encode(), DIALECT_PATHS["chat"], None
    plain = no_history_doc(40_000)
    yield "nohist", orjson.dumps(plain), DIALECT_PATHS["chat"], None
    yield "nohist-ascii", json.dumps(plain).encode(), DIALECT_PATHS["chat"], None
    yield "nohist-ascii-nopath", json.dumps(plain).encode(), None, None
    yield "notjson", raw[:-40], DIALECT_PATHS["chat"], None
    yield "notjson-ascii", json.dumps(plain).encode()[:-3], DIALECT_PATHS["chat"], None
    yield "has-steps", orjson.dumps({**orjson.loads(raw), "additional_steps": []}), DIALECT_PATHS["chat"], None
    yield "wrong-path", raw, DIALECT_PATHS["responses"], None
    rng = random.Random(5)
    for dialect in DIALECT_PATHS:
        for parallel in (1, 4):
            s = Session(dialect, parallel, seed=11 + parallel)
            rounds = (1, 2, 3, 7, 26, 60) if quick else (*range(1, 31), 60, 200)
            for r in rounds:
                doc = s.doc(r)
                name = f"{dialect}-p{parallel}-r{r}"
                yield name, orjson.dumps(doc), DIALECT_PATHS[dialect], None
                if r in (3, 26, 60, 200):
                    yield name + "-nopath", orjson.dumps(doc), None, None
                    yield name + "-indent", json.dumps(doc, indent=1).encode(), DIALECT_PATHS[dialect], None
                    for label, mutated in mutations(doc, dialect, rng):
                        yield f"{name}-{label}", orjson.dumps(mutated), DIALECT_PATHS[dialect], None


def outcome_digest(result: Any) -> str:
    """Everything a rewrite reports, as one digest: body bytes, steps, plan, accounting."""
    plan = result.plan
    summary = orjson.dumps(result.summary(), option=orjson.OPT_NON_STR_KEYS)
    parts = [result.status, result.reason, result.dialect, result.body, orjson.dumps(result.steps)]
    parts += [orjson.dumps(result.notes), summary]
    if plan is not None:
        parts += [
            orjson.dumps([p.to_json() for p in plan.accounting]),
            orjson.dumps([plan.delta_start, sorted(plan.stepped), [c.pos for c in plan.step_calls]]),
            b"".join(s.SerializeToString(deterministic=True) for s in plan.steps),
        ]
    h = hashlib.sha256()
    for p in parts:
        b = p if isinstance(p, bytes) else repr(p).encode()
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()


def golden_digests(quick: bool = False) -> dict[str, str]:
    from native_bridge.core.pipeline import Config

    out = {}
    for name, raw, path, config in golden_cases(quick):
        out[name] = outcome_digest(rewrite(raw, config or Config(), path))
    return out


def golden_check(quick: bool = False) -> list[str]:
    """Where the fast paths disagree with the reference paths; empty when they all agree.

    Every case is rewritten with no memo (the reference), then through one shared memo
    after the cases before it (resumed conversations, forks, unrelated bodies), and every
    step's JSON is compared with protobuf's own (MessageToDict of the message)."""
    from native_bridge.core.encoder import step_json
    from native_bridge.core.memo.store import Memo
    from native_bridge.core.pipeline import Config

    memo, problems = Memo(), []
    for name, raw, path, config in golden_cases(quick):
        ref = rewrite(raw, config or Config(), path, memo=None)
        fast = rewrite(raw, config or Config(), path, memo=memo)
        if outcome_digest(fast) != outcome_digest(ref):
            problems.append(f"{name}: the memo changed the result")
        if ref.plan is not None and ref.plan.docs != [step_json(s) for s in ref.plan.steps]:
            problems.append(f"{name}: step JSON differs from protobuf's MessageToDict")
    if memo.errors:
        problems.append(f"the memo raised {memo.errors} times (the full rewrite covered for it)")
    if not memo.hits:
        problems.append("the memo never resumed a conversation")
    return problems
