"""Case N of a run: a seed (support.histories.seeds), damaged, sent to a path with a config, planted
secrets and maybe an encoding. ``make_case(seed, index)`` is deterministic: a case number found by
a run is the same case again (``scripts/fuzz --seed S --case N --show``)."""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field
from typing import Any

import orjson
from native_bridge.core.kinds import KINDS
from native_bridge.core.pipeline import Config
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS
from support.histories import DIALECT_PATHS as PATHS
from support.histories.seeds import SEEDS, make_seed

from .encoding import TOO_DEEP, _dumps, _dumps_any_depth
from .mutations import BYTE_MUTATIONS, DOC_MUTATIONS, _weighted

OTHER_PATHS = [None, "/v1/models", "/v1/messages/count_tokens", "/v1/embeddings", "/", "/v1/chat/completions/x"]

SECRET = "SECRETFUZZ"  # planted secrets carry this, and no record may


@dataclass
class Case:
    index: int
    dialect: str  # of the seed
    raw: bytes
    path: str | None
    config: Config
    mutations: list[str]
    user_agent: str | None = None  # the seed's client's (None: a client nobody can identify)
    secrets: list[tuple[str, str]] = field(default_factory=list)  # planted headers
    encoding: str | None = None  # Content-Encoding for the addon
    encoded: bytes | None = None  # the body as sent, when an encoding is set
    query: str = ""


def _config(rng: random.Random) -> Config:
    x = rng.random()
    if x < 0.85:
        return Config()
    if x < 0.9:
        return Config(dialect=rng.choice(["chat", "anthropic", "responses"]))
    if x < 0.95:
        return Config(kinds=frozenset(rng.sample(list(KINDS), rng.randint(0, len(KINDS)))))
    tools = dict(DEFAULT_TOOL_KINDS)
    tools["TodoWrite"] = "run_command"
    tools["mcp__acme__thing"] = "view_file"
    tools.pop("Bash", None)
    return Config(tool_kinds=tools)


def make_case(seed: int, index: int) -> Case:
    rng = random.Random(f"{seed}:{index}")
    dialect = rng.choice(list(SEEDS))
    sd = make_seed(dialect, rng)
    doc: Any = sd.doc
    mutations: list[str] = []
    n = rng.choice([0, 1, 1, 2, 2, 3, 4])
    for _ in range(n):
        name, fn = _weighted(rng, DOC_MUTATIONS)
        fn(doc, rng)
        mutations.append(name)
    if isinstance(doc, dict) and rng.random() < 0.2:  # secret-looking body fields, which records must not show
        doc["api_key"] = f"sk-{SECRET}-body"
        doc["metadata"] = {"user_id": "u1", "token": f"{SECRET}-meta"}
    try:
        raw = _dumps(doc)
    except orjson.JSONEncodeError:  # mutations nested it past orjson's 254 levels: still a case, counted
        raw = _dumps_any_depth(doc)
        mutations.append(TOO_DEEP)
    if rng.random() < 0.25:
        name, fn = _weighted(rng, BYTE_MUTATIONS)
        raw = fn(raw, rng)
        mutations.append(name)
    x = rng.random()
    if x < 0.75:
        path = PATHS[dialect]
    elif x < 0.9:
        path = rng.choice([p for d, p in PATHS.items() if d != dialect])
    else:
        path = rng.choice(OTHER_PATHS)
    case = Case(index, dialect, raw, path, _config(rng), mutations, sd.user_agent)
    if rng.random() < 0.3:
        case.secrets = [
            ("Authorization", f"Bearer {SECRET}-auth"),
            ("x-api-key", f"{SECRET}-xkey"),
            ("api-key", f"{SECRET}-apikey"),
            ("Cookie", f"session={SECRET}-cookie; theme=dark"),
            ("Proxy-Authorization", f"Basic {SECRET}-proxy"),
        ]
        case.query = rng.choice([f"?key={SECRET}-q1", f"?api_key={SECRET}-q2&x=1", f"?x=1&access_token={SECRET}-q3"])
    if rng.random() < 0.2:
        case.encoding = rng.choice(["gzip", "deflate", "br", "zstd", "identity", "gzip, zstd", "x-unknown", "GZIP"])
        case.encoded = _encode(case.raw, case.encoding, rng)
    return case


def _encode(raw: bytes, encoding: str, rng: random.Random) -> bytes:
    from mitmproxy.net import encoding as enc

    data = raw
    with contextlib.suppress(ValueError):
        for e in [x.strip() for x in encoding.split(",")]:
            data = enc.encode(data, e.lower()) if e.lower() not in ("x-unknown",) else data
    if rng.random() < 0.3:  # broken: truncated, or not compressed at all
        data = rng.choice([data[: len(data) // 2], raw, b"\x1f\x8b" + raw[:20], b""])
    return data
