"""The damage done to a seed: mutations of its document (wrong types, deletions, duplicates, moves,
ids, arguments, deep nesting, big numbers, huge strings, thousands of calls, another dialect's
shape) and of its bytes (truncation, flipped bytes, invalid UTF-8, lone surrogates, escapes)."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable
from typing import Any

from native_bridge.core.pipeline import DELTA_KEY, STEPS_KEY

from .encoding import _key, _splice_deep


def _nodes(doc: Any, limit: int = 400) -> list[tuple[Any, Any]]:
    """(container, key) of every node under the root, breadth first, at most ``limit``."""
    out: list[tuple[Any, Any]] = []
    queue = [doc]
    while queue and len(out) < limit:
        node = queue.pop(0)
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for k in keys:
            out.append((node, k))
            if isinstance(node[k], dict | list):
                queue.append(node[k])
    return out


def _lists(doc: Any) -> list[list[Any]]:
    return [c[k] for c, k in _nodes(doc) if isinstance(c[k], list)] + ([doc] if isinstance(doc, list) else [])


def _wrong(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            False,
            0,
            -1,
            2**31,
            2**63 - 1,
            -(2**63),
            1.5,
            -0.0,
            1e308,
            "",
            "x",
            "null",
            "{",
            "[]",
            "\u0000",
            "\u202e\ufeff",
            "🙂" * 3,
            [],
            [None],
            [[]],
            {},
            {"type": None},
            {"role": "tool"},
            {"type": "tool_use"},
            {"type": "function_call"},
        ]
    )


_ID_KEYS = ("id", "tool_call_id", "tool_use_id", "call_id")
_DEPTHS = [10, 100, 250, 252, 253, 254, 255, 300, 600, 1000, 1022, 1023, 1024, 1030]


def _m_wrong_type(doc: Any, rng: random.Random) -> None:
    nodes = _nodes(doc)
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = _wrong(rng)


def _m_null_list(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc) if isinstance(c[k], list)]
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = rng.choice([None, {}, "", 0, "[]"])


def _m_delete(doc: Any, rng: random.Random) -> None:
    nodes = _nodes(doc)
    if nodes:
        c, k = rng.choice(nodes)
        del c[k]


def _m_duplicate(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if x]
    if lists:
        lst = rng.choice(lists)
        i = rng.randrange(len(lst))
        lst.insert(rng.randrange(len(lst) + 1), copy.deepcopy(lst[i]))


def _m_swap(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if len(x) > 1]
    if lists:
        lst = rng.choice(lists)
        i, j = rng.randrange(len(lst)), rng.randrange(len(lst))
        lst[i], lst[j] = lst[j], lst[i]


def _m_move(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if len(x) > 1]
    if lists:
        lst = rng.choice(lists)
        lst.insert(rng.randrange(len(lst)), lst.pop(rng.randrange(len(lst))))


def _m_reverse(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if len(x) > 1]
    if lists:
        rng.choice(lists).reverse()


def _m_ids(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc, 2000) if k in _ID_KEYS]
    if not nodes:
        return
    c, k = rng.choice(nodes)
    other = rng.choice(nodes)
    value = rng.choice([other[0][other[1]], None, "", 7, ["x"], {"id": "x"}, "../../etc/passwd", "c" * 300])
    # A copy: another id's value can be a container holding c itself, and a document that contains
    # itself has no JSON (seed 20261130 case 44618: "Recursion limit reached" ended the run).
    c[k] = copy.deepcopy(value) if isinstance(value, dict | list) else value
    if rng.random() < 0.3:
        del c[k]


def _m_arguments(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc, 2000) if k in ("arguments", "input", "action", "output", "content")]
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = rng.choice(["{", "", "null", "[1,2]", '{"command": 1}', '"str"', "{}", '{"a":' * 50, 1, None, []])


def _m_deep(doc: Any, rng: random.Random) -> None:
    """A value nested ``depth`` levels deep, spliced in as bytes (no recursion on this side)."""
    nodes = _nodes(doc)
    marker = f"__DEEP_{rng.choice(_DEPTHS)}_{rng.choice('lo')}__"
    if nodes and rng.random() < 0.8:
        c, k = rng.choice(nodes)
        c[k] = marker
    elif isinstance(doc, dict):
        doc["metadata"] = marker


def _m_big_int(doc: Any, rng: random.Random) -> None:
    """Numbers at the edges of int32/int64 where the seed has a number (exit codes, offsets, limits)."""
    nodes = [(c, k) for c, k in _nodes(doc, 2000) if type(c[k]) is int or k in ("exit_code", "offset", "limit")]
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = rng.choice([2**31 - 1, 2**31, -(2**31) - 1, 2**32, 2**63 - 1, -(2**63), 2**64 - 1, -1, 1.0, 1e300])


def _m_huge_string(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc) if isinstance(c[k], str)]
    if nodes:
        c, k = rng.choice(nodes)
        size = rng.choice([70_000, 1 << 20, 3 << 20])
        filler = rng.choice(["a", "Exit code: 1\n", "\n", "🙂", "\\", "[", " ", "exit code 1 "])
        c[k] = c[k] + filler * (size // len(filler.encode()))


def _m_many_calls(doc: Any, rng: random.Random) -> None:
    """Thousands of tool calls: one call/result pair of the seed copied under fresh ids."""
    lists = [x for x in _lists(doc) if x and all(isinstance(i, dict) for i in x)]
    if not lists:
        return
    lst = max(lists, key=len)
    n = rng.choice([1000, 5000, 20000])
    base = copy.deepcopy(lst)
    size = len(_splice_deep(_key(base)))  # at most ~8 MB in all: the point is the count, not the size
    for i in range(min(n // max(1, len(base)), (8 << 20) // max(1, size))):
        for item in base:
            item = copy.deepcopy(item)
            for c, k in _nodes([item], 10_000):
                if k in _ID_KEYS and isinstance(c[k], str):
                    c[k] += f"_{i}"
            lst.append(item)


def _m_foreign(doc: Any, rng: random.Random) -> None:
    """Shapes of another dialect: keys and items that make a body look like something else."""
    if not isinstance(doc, dict):
        return
    choice = rng.randrange(6)
    if choice == 0:
        doc["input"] = doc.pop("messages", "x") if rng.random() < 0.5 else "hello"
    elif choice == 1:
        doc["messages"] = doc.pop("input", []) if rng.random() < 0.5 else [{"role": "user", "content": "x"}]
    elif choice == 2:
        doc["system"] = rng.choice(["s", [{"type": "text", "text": "s"}], None])
    elif choice == 3:
        items = doc.get("messages") or doc.get("input")
        if isinstance(items, list):
            items.append(
                rng.choice(
                    [
                        {"role": "assistant", "content": [{"type": "tool_use", "id": "x1", "name": "Bash"}]},
                        {"role": "tool", "tool_call_id": "x1", "content": "ok"},
                        {"type": "function_call_output", "call_id": "x1", "output": "ok"},
                        {"role": "assistant", "tool_calls": [{"id": "x1", "function": {"name": "Bash"}}]},
                    ]
                )
            )
    elif choice == 4:
        doc[STEPS_KEY] = rng.choice([[], None, [{"type": "x"}], "x"])
    else:
        doc[DELTA_KEY] = rng.choice([0, -1, "x", None])


DOC_MUTATIONS: list[tuple[str, Callable[[Any, random.Random], None], float]] = [
    ("wrong_type", _m_wrong_type, 10),
    ("null_list", _m_null_list, 6),
    ("delete", _m_delete, 8),
    ("duplicate", _m_duplicate, 8),
    ("swap", _m_swap, 6),
    ("move", _m_move, 6),
    ("reverse", _m_reverse, 2),
    ("ids", _m_ids, 10),
    ("arguments", _m_arguments, 6),
    ("deep", _m_deep, 2),
    ("big_int", _m_big_int, 3),
    ("huge_string", _m_huge_string, 0.25),
    ("many_calls", _m_many_calls, 0.15),
    ("foreign", _m_foreign, 5),
]


def _b_truncate(raw: bytes, rng: random.Random) -> bytes:
    return raw[: rng.randrange(len(raw) + 1)]


def _b_flip(raw: bytes, rng: random.Random) -> bytes:
    if not raw:
        return raw
    i = rng.randrange(len(raw))
    return raw[:i] + bytes([rng.randrange(256)]) + raw[i + 1 :]


def _in_string(raw: bytes, rng: random.Random, insert: bytes) -> bytes:
    quotes = [m.start() for m in re.finditer(rb'(?<!\\)"', raw[:200_000])]
    i = rng.choice(quotes) + 1 if quotes else 0
    return raw[:i] + insert + raw[i:]


def _b_invalid_utf8(raw: bytes, rng: random.Random) -> bytes:
    return _in_string(raw, rng, rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]))


def _b_surrogate(raw: bytes, rng: random.Random) -> bytes:
    return _in_string(raw, rng, rng.choice([rb"\ud800", rb"\udfff", rb"\udc00\ud800", rb"\ud83d\ude00", rb"\u0000"]))


def _b_escape_markers(raw: bytes, rng: random.Random) -> bytes:
    """Markers written with \\u escapes: the cheap pre-check must not skip them."""
    for m in (b"tool_calls", b"tool_use", b"tool_result", b"_call"):
        raw = raw.replace(b'"' + m, b'"\\u00' + f"{m[0]:02x}".encode() + m[1:], 1 if rng.random() < 0.5 else -1)
    return raw


def _b_numbers(raw: bytes, rng: random.Random) -> bytes:
    value = rng.choice([b"18446744073709551616", b"-9223372036854775809", b"1e400", b"NaN", b"-Infinity", b"1.0e5"])
    if raw.startswith(b"{") and len(raw) > 1:
        return b'{"n":' + value + b"," + raw[1:]
    return raw + value


def _b_dup_key(raw: bytes, rng: random.Random) -> bytes:
    if raw.startswith(b"{") and len(raw) > 1:
        return b'{"messages":null,"input":7,' + raw[1:]
    return raw


def _b_wrap(raw: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"\xef\xbb\xbf" + raw, b"  \n" + raw + b"\n ", raw + b" x", raw + b"\x00", b"[" + raw + b"]"])


def _b_replace(raw: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"", b"null", b"[]", b"{}", b'"x"', b"\xff\xfe", b"{" * 2000, b"[" * 1023 + b"]" * 1023])


BYTE_MUTATIONS: list[tuple[str, Callable[[bytes, random.Random], bytes], float]] = [
    ("truncate", _b_truncate, 3),
    ("flip", _b_flip, 3),
    ("invalid_utf8", _b_invalid_utf8, 3),
    ("surrogate", _b_surrogate, 3),
    ("escape_markers", _b_escape_markers, 2),
    ("numbers", _b_numbers, 1),
    ("dup_key", _b_dup_key, 1),
    ("wrap", _b_wrap, 1),
    ("replace", _b_replace, 0.5),
]


def _weighted(rng: random.Random, table: list[tuple[str, Any, float]]) -> tuple[str, Any]:
    name, fn, _ = rng.choices(table, weights=[w for *_, w in table])[0]
    return name, fn
