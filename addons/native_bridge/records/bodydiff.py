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

from bisect import bisect_right
from collections import OrderedDict
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


# ---- steps that refer to the original ------------------------------------------------------
#
# The steps restate the history's tool output (a file read, a command's output, an edit's text)
# that ``before`` holds already: a long string of a step that ``before`` holds is written as a
# reference to it,
#
#     {"$before": [key or index, ...], "json": [key or index, ...], "at": i, "len": n}
#
# the string at that path of ``before`` (jq: ``getpath``); with "json", that string is JSON text
# (a Chat tool call's arguments, a Responses shell output) and the value is at that path of it;
# with "at" and "len", it is the slice [at, at + len) of that string (in code points).

REF = "$before"
LEAST_REF = 512  # characters: shorter strings stay as they are (a command line, a path)
_REF_KEYS = frozenset({REF, "json", "at", "len"})


def _collect(
    node: Any, path: list[Any], inner: list[Any] | None, least: int, paths: list[Any], texts: list[str]
) -> None:
    """The strings of ``least`` characters or more in ``node``, in document order, with their paths
    (and inside a string that holds JSON, the path within it)."""
    stack = [(node, path)]
    while stack:
        x, p = stack.pop()
        if isinstance(x, dict):
            stack.extend((v, [*p, k]) for k, v in reversed(x.items()))
        elif isinstance(x, list):
            stack.extend((v, [*p, i]) for i, v in reversed(list(enumerate(x))))
        elif isinstance(x, str) and len(x) >= least:
            paths.append((p, None) if inner is None else (inner, p))
            texts.append(x)
            if inner is None and x[0] in "{[":
                try:
                    doc = orjson.loads(x)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(doc, dict | list):
                    _collect(doc, [], p, least, paths, texts)


class _Strings:
    """Every long string of a document, with its path, to find a step's string in."""

    def __init__(self, doc: Any, least: int, index: Index | None = None) -> None:
        self.least = least
        self.paths: list[tuple[list[Any], list[Any] | None]] = []
        self.texts: list[str] = []
        if index is None or not isinstance(doc, dict):
            _collect(doc, [], None, least, self.paths, self.texts)
        else:  # in document order, as the walk goes: each top-level array item's strings from the index
            for k, v in doc.items():
                if not isinstance(v, list):
                    _collect(v, [k], None, least, self.paths, self.texts)
                    continue
                for i, item in enumerate(v):
                    paths, texts = index.strings(item, least)
                    self.paths += [([k, i, *p], None) if q is None else ([k, i, *p], q) for p, q in paths]
                    self.texts += texts
        self.whole = {t: i for i, t in reversed(list(enumerate(self.texts)))}
        self.starts: list[int] = []
        at = 0
        for t in self.texts:
            self.starts.append(at)
            at += len(t) + 1
        self.joined = "\x00".join(self.texts)
        self._hint = 0
        # Characters the substring searches may scan: steps found are found in history order, a
        # few steps ahead of the last one; a string the body does not hold costs a whole scan.
        self._budget = 16 * len(self.joined) + (64 << 20)

    def find(self, s: str) -> dict[str, Any] | None:
        i = self.whole.get(s)
        if i is not None:
            return self._ref(i)
        if self._budget <= 0:  # searched enough: whole strings only (a body unlike its steps)
            return None
        at = self.joined.find(s, self._hint)
        self._budget -= (at + len(s) - self._hint) if at >= 0 else len(self.joined) - self._hint
        if at < 0:
            at = self.joined.find(s, 0, self._hint + len(s))
            self._budget -= self._hint + len(s)
        if at < 0:
            return None
        i = bisect_right(self.starts, at) - 1
        offset = at - self.starts[i]
        if offset + len(s) > len(self.texts[i]):  # across two strings (a step's string holding NUL)
            return None
        self._hint = at + len(s)
        return {**self._ref(i), "at": offset, "len": len(s)}

    def _ref(self, i: int) -> dict[str, Any]:
        outer, inner = self.paths[i]
        return {REF: outer} if inner is None else {REF: outer, "json": inner}


class Index:
    """The long strings of the array items :func:`refer` has looked in, by the item's identity: a
    record worker's redacted items (redact.Texts) come back as the same objects turn after turn,
    so a turn's record walks only its new items. Holds each item it knows (``max_items``)."""

    def __init__(self, max_items: int = 1 << 14) -> None:
        self.max_items = max_items
        self._known: OrderedDict[tuple[int, int], tuple[Any, Any]] = OrderedDict()  # oldest first

    def strings(self, item: Any, least: int) -> tuple[list[Any], list[str]]:
        """The paths (inside ``item``) and texts of ``item``'s strings of ``least`` or more characters."""
        key = (id(item), least)
        known = self._known.pop(key, None)
        if known is None:
            paths: list[Any] = []
            texts: list[str] = []
            _collect(item, [], None, least, paths, texts)
            known = item, (paths, texts)
            while len(self._known) >= self.max_items:
                self._known.popitem(last=False)
        self._known[key] = known  # the newest last; holding the item keeps its identity its own
        return known[1]


def refer(steps: Any, base: Any, least: int = LEAST_REF, index: Index | None = None) -> Any:
    """``steps`` with each string of ``least`` characters or more that ``base`` holds written as
    a reference to it (:func:`resolve` gives ``steps`` back); ``index``: a worker's, that knows
    the items of ``base`` it has seen."""
    if base is None or not isinstance(steps, list):
        return steps
    strings = _Strings(base, least, index)
    if not strings.texts:
        return steps

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, str) and len(x) >= least:
            return strings.find(x) or x
        return x

    return walk(steps)


def is_ref(x: Any) -> bool:
    return isinstance(x, dict) and REF in x and x.keys() <= _REF_KEYS


def resolve(steps: Any, base: Any) -> Any:
    """Steps as :func:`refer` wrote them, with every reference replaced by the string it names
    in ``base``; steps without references (records before version 3) come back as they are."""
    parsed: dict[tuple[Any, ...], Any] = {}  # a JSON string referred to many times is parsed once

    def get(doc: Any, path: list[Any]) -> Any:
        for k in path:
            doc = doc[k]
        return doc

    def value(ref: dict[str, Any]) -> str:
        try:
            s = get(base, ref[REF])
            if "json" in ref:
                key = tuple(ref[REF])
                if key not in parsed:
                    parsed[key] = orjson.loads(s)
                s = get(parsed[key], ref["json"])
            if "at" in ref:
                s = s[ref["at"] : ref["at"] + ref["len"]]
        except (KeyError, IndexError, TypeError, orjson.JSONDecodeError) as e:
            raise ValueError(f"a step refers to {ref} of the original body, which does not hold it") from e
        if not isinstance(s, str):
            raise ValueError(f"a step refers to {ref} of the original body, which is not a string there")
        return s

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return value(x) if is_ref(x) else {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(steps)


# ---- a record's bodies, read back (writer.py writes them) -------------------------------


def steps_of(rec: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The steps (redacted) of a record of any version, their references to ``before`` resolved."""
    return resolve(rec.get("steps"), rec.get("before"))


def after_doc(rec: dict[str, Any]) -> Any:
    """The rewritten body (redacted) of a record of any version, or None when it has none."""
    if rec.get("after") is not None or "after_patch" not in rec:
        return rec.get("after")
    patch, before = rec.get("after_patch"), rec.get("before")
    if patch is None or before is None:
        return None
    return apply(before, patch, steps_of(rec))


def rebuild_after(rec: dict[str, Any]) -> bytes | None:
    """The bytes of the rewritten body as they went upstream (identical unless redaction masked a secret
    in it: compare with ``after_sha256``)."""
    doc = after_doc(rec)
    return None if doc is None else orjson.dumps(doc)
