"""A rewritten body as what changed from the original, so a record holds each body once.

A record keeps ``before`` (the decoded original) and ``after_patch``: the rewritten body
described against ``before``. Agents resend the whole history every turn and the bridge
moves only a few items out of it, so the patch is a few ranges of kept items plus the
new ones; ``additional_steps`` points at the record's ``steps`` instead of repeating
them. :func:`apply` gives the rewritten document back, and ``orjson.dumps`` of it the
bytes that went upstream (the core writes the rewritten body with ``orjson.dumps``), save
for what redaction masked in both.

A patch node is one of::

    {"value": x}                           x itself
    {"steps": true}                        the record's steps
    {"object": {"keys": [...], "changed": {key: node}}}
                                           an object with these keys in this order; a key not in
                                           "changed" holds the original's value for that key
    {"list": [op, ...]}                    a list, built from ops in order: [i, j] copies the
                                           original's items i..j-1, {"at": i, "patch": node} is
                                           item i changed, any other node is a new item
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

import orjson


def _enc(x: Any) -> bytes:
    return orjson.dumps(x)


def diff(base: Any, new: Any, steps: list[Any] | None = None) -> dict[str, Any]:
    """The node that rebuilds ``new`` from ``base`` (key order and item order exact)."""
    return _node(base, new, steps or None)


def _literal(new: Any, steps: list[Any] | None) -> dict[str, Any]:
    if steps is not None and isinstance(new, list) and len(new) == len(steps) and _enc(new) == _enc(steps):
        return {"steps": True}
    return {"value": new}


def _node(base: Any, new: Any, steps: list[Any] | None) -> dict[str, Any]:
    if type(base) is dict and type(new) is dict:
        changed: dict[str, Any] = {}
        for k, v in new.items():
            if k not in base:
                changed[k] = _literal(v, steps)
            elif _enc(base[k]) != _enc(v):
                changed[k] = _smaller(_node(base[k], v, steps), _literal(v, steps))
        return {"object": {"keys": list(new), "changed": changed}}
    if type(base) is list and type(new) is list:
        return {"list": _list_ops(base, new, steps)}
    return _literal(new, steps)


def _smaller(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return a if len(_enc(a)) < len(_enc(b)) else b


def _list_ops(base: list[Any], new: list[Any], steps: list[Any] | None) -> list[Any]:
    a = [_enc(x) for x in base]
    b = [_enc(x) for x in new]
    ops: list[Any] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append([i1, i2])
        elif tag in ("replace", "insert"):
            for k, j in enumerate(range(j1, j2)):
                i = i1 + k
                literal = _literal(new[j], steps)
                if i < i2 and isinstance(base[i], dict | list):
                    changed = {"at": i, "patch": _node(base[i], new[j], steps)}
                    ops.append(_smaller(changed, literal))
                else:
                    ops.append(literal)
    return ops


def apply(base: Any, node: dict[str, Any], steps: list[Any] | None = None) -> Any:
    """The document a node describes against ``base``."""
    if "value" in node:
        return node["value"]
    if "steps" in node:
        return list(steps or [])
    if "object" in node:
        spec = node["object"]
        changed = spec.get("changed", {})
        return {
            k: apply(base.get(k) if isinstance(base, dict) else None, changed[k], steps) if k in changed else base[k]
            for k in spec["keys"]
        }
    if "list" in node:
        out: list[Any] = []
        for op in node["list"]:
            if isinstance(op, list):
                out.extend(base[op[0] : op[1]])
            elif "at" in op:
                out.append(apply(base[op["at"]], op["patch"], steps))
            else:
                out.append(apply(None, op, steps))
        return out
    raise ValueError(f"not a patch node: {sorted(node)}")
