"""The Gemini API dialect (read/write) and rewrite() on generateContent bodies, as Gemini CLI sends them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chatkit import build_pending
from native_bridge import rewrite
from native_bridge.core.builder import build
from native_bridge.core.dialects import DialectError, gemini
from native_bridge.core.encoder import step_json
from native_bridge.core.memo.store import Memo
from native_bridge.core.pipeline import dialect_for_body, dialect_for_path

PATH = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
STEPS, DELTA = "additional_steps", "additional_steps_delta_start"
SIG = "CiQBVKhc7Mz1Q2l0aG91Z2h0c2lnbmF0dXJl"
# Gemini CLI's shell result (packages/core/src/tools/shell.ts), as it sends it in {"output": ...}.
SHELL_OK = (
    "Command: ls\nDirectory: (root)\nOutput: a.txt\nError: (none)\nExit Code: 0\nSignal: (none)\n"
    "Background PIDs: (none)\nProcess Group PGID: 4242"
)
CANCEL = "[Operation Cancelled] Reason: User did not allow tool call"


# ---- tiny builders ----------------------------------------------------------------------------


def call(id: str | None, name: str, sig: str | None = None, **args: Any) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": name, "args": args}
    if id is not None:
        fc["id"] = id
    part: dict[str, Any] = {"functionCall": fc}
    if sig is not None:
        part["thoughtSignature"] = sig
    return part


def shell(id: str | None, command: str, sig: str | None = None) -> dict[str, Any]:
    return call(id, "run_shell_command", sig, command=command)


def res(id: str | None, name: str = "run_shell_command", output: str | None = "ok", error: str | None = None,
        **extra: Any) -> dict[str, Any]:  # fmt: skip
    response: dict[str, Any] = {}
    if output is not None:
        response["output"] = output
    if error is not None:
        response["error"] = error
    fr: dict[str, Any] = {"name": name, "response": response, **extra}
    if id is not None:
        fr["id"] = id
    return {"functionResponse": fr}


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"text": t, **extra}


def user(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "parts": [text(p) if isinstance(p, str) else p for p in parts]}


def model(*parts: Any) -> dict[str, Any]:
    return {"role": "model", "parts": [text(p) if isinstance(p, str) else p for p in parts]}


def body(*contents: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "contents": list(contents),
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {"type": "object"}}]}],
        "generationConfig": {"temperature": 0, "thinkingConfig": {"includeThoughts": True}},
        **extra,
    }


def rw(doc: Any, path: str = PATH, memo: Memo | None = None) -> Any:
    return rewrite(doc if isinstance(doc, bytes) else orjson.dumps(doc), path=path, memo=memo)


def after(doc: dict[str, Any]) -> dict[str, Any]:
    r = rw(doc)
    assert r.status == "rewritten", r.reason
    return orjson.loads(r.body or b"")


def cmdlines(doc: dict[str, Any]) -> list[str]:
    return [s["runCommand"]["commandLine"] for s in doc[STEPS]]


def kept(doc: dict[str, Any]) -> dict[tuple[str, str | None], str | None]:
    r = rw(doc)
    assert r.plan is not None
    return {(p.item, p.id): p.code for p in r.plan.kept}


# ---- which requests are Gemini's -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1beta/models/gemini-2.5-pro:generateContent",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/v1/models/gemini-2.5-pro:generateContent",
        "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent",
    ],
)
def test_paths_name_the_dialect(path: str) -> None:
    assert dialect_for_path(path) is gemini


@pytest.mark.parametrize("path", ["/v1beta/models/gemini-2.5-pro:countTokens", "/v1beta/models", "/v1/embedContent"])
def test_other_gemini_paths_do_not(path: str) -> None:
    assert dialect_for_path(path) is None


def test_body_shape_names_the_dialect() -> None:
    assert dialect_for_body(body(user("hi"))) is gemini
    r = rw(body(user("go"), model(shell("a", "ls")), user(res("a", output=SHELL_OK))), path="/proxy")
    assert (r.status, r.dialect) == ("rewritten", "gemini")


# ---- read ------------------------------------------------------------------------------------


def test_read_calls_results_error_flag_and_turns() -> None:
    h = gemini.read(
        body(
            user("fix it"),
            model(text("Looking."), shell("a", "ls", SIG), call("b", "read_file", absolute_path="/w/x")),
            user(res("b", "read_file", "B"), res("a", output=None, error="Command failed")),
            model("done"),
        )
    )
    assert [(c.pos, c.turn, c.id, c.name, c.arguments) for c in h.calls] == [
        (0, 1, "a", "run_shell_command", {"command": "ls"}),
        (1, 1, "b", "read_file", {"absolute_path": "/w/x"}),
    ]
    assert [(r.pos, r.turn, r.call_id, r.text, r.is_error) for r in h.results] == [
        (2, 2, "b", "B", False),
        (3, 2, "a", "Command failed", True),
    ]
    assert h.turns == ["other", "calls", "results", "other"]


@pytest.mark.parametrize(
    ("response", "text", "placeholder"),
    [
        ({"output": "x", "extra": 1}, None, False),  # not exactly one text field
        ({"output": {"nested": "x"}}, None, False),
        ({}, None, False),
        ({"error": CANCEL}, CANCEL, True),
        ({"output": "partial", "error": CANCEL}, CANCEL, True),
    ],
)  # fmt: skip
def test_responses_that_are_not_one_text_or_are_stand_ins(
    response: dict[str, Any], text: str | None, placeholder: bool
) -> None:
    fr = {"functionResponse": {"id": "a", "name": "run_shell_command", "response": response}}
    h = gemini.read(body(model(shell("a", "ls")), user(fr)))
    (r,) = h.results
    assert (r.text, r.placeholder) == (text, placeholder)


def test_binary_beside_or_inside_a_response_is_not_text() -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}
    h = gemini.read(
        body(
            model(call("a", "read_file", absolute_path="/w/a.png"), call("b", "read_file", absolute_path="/w/b.png")),
            user(res("a", "read_file", "Binary content provided (1 item(s))."), image,
                 res("b", "read_file", "Binary content provided (1 item(s)).", parts=[image])),
        )
    )  # fmt: skip
    assert [r.text for r in h.results] == [None, None]


def test_a_results_content_with_the_users_words_ends_the_round() -> None:
    # Gemini CLI coalesces a function response content with the prompt that follows it.
    h = gemini.read(body(user("go"), model(shell("a", "ls")), user(res("a", output=SHELL_OK), text("now what?"))))
    assert h.turns == ["other", "calls", "other"]
    assert build(h).delta_start == 1


@pytest.mark.parametrize(
    "contents",
    [{"role": "user"}, [{"role": "user", "parts": "x"}], [{"role": "user", "parts": ["x"]}], ["x"]],
)
def test_bad_shapes_are_dialect_errors(contents: Any) -> None:
    with pytest.raises(DialectError):
        gemini.read({"contents": contents})
    assert rw({"contents": contents}).status in ("skipped", "unchanged")


# ---- rewrite ------------------------------------------------------------------------------------


def test_rewrite_steps_keeps_the_rest_and_leaves_other_fields() -> None:
    # The turn's signature is on write_todos (first call), which stays: "a" may go.
    doc2 = body(
        user("go"),
        model(call("t", "write_todos", SIG, todos=[]), shell("a", "ls")),
        user(res("t", "write_todos", "ok"), res("a", output=SHELL_OK)),
        model("Listed."),
        user("thanks"),
    )
    a = after(doc2)
    assert cmdlines(a) == ["ls"]
    assert a["contents"] == [
        user("go"),
        model(call("t", "write_todos", SIG, todos=[])),
        user(res("t", "write_todos", "ok")),
        model("Listed."),
        user("thanks"),
    ]
    assert {k: v for k, v in a.items() if k not in ("contents", STEPS, DELTA)} == {
        k: v for k, v in doc2.items() if k != "contents"
    }


def test_a_signed_call_stays_when_its_content_stays_and_goes_when_it_goes_whole() -> None:
    todo = call("t", "write_todos", todos=[])
    doc = body(user("go"), model(shell("a", "ls", SIG), todo), user(res("a", output=SHELL_OK), res("t", "write_todos")))
    r = rw(doc)
    assert r.status == "unchanged" and kept(doc)[("call", "a")] == "validity"
    whole = body(
        user("go"),
        model({"text": "Let me look.", "thought": True}, shell("a", "ls", SIG), shell("b", "pwd")),
        user(res("a", output=SHELL_OK), res("b", output=SHELL_OK.replace("ls", "pwd"))),
        model("Done."),
        user("ok"),
    )
    a = after(whole)
    assert cmdlines(a) == ["ls", "pwd"]
    assert a["contents"] == [user("go"), model("Done."), user("ok")]  # the thought went with its calls


def test_no_ids_means_no_correlation() -> None:
    doc = body(user("go"), model(shell(None, "ls")), user(res(None, output=SHELL_OK)), model("ok"), user("next"))
    r = rw(doc)
    assert r.status == "unchanged"
    assert {p.code for p in r.plan.kept} == {"no_id"}


def test_error_flag_makes_a_failure_and_a_cancellation_is_no_step() -> None:
    doc = body(
        user("go"),
        model(shell("a", "make"), shell("c", "rm -rf /tmp/x")),
        user(res("a", output=None, error="Command failed: make"), res("c", output=None, error=CANCEL)),
        model("Hm."),
        user("again"),
    )  # fmt: skip
    a = after(doc)
    assert [(s["runCommand"]["commandLine"], s["runCommand"].get("exitCode")) for s in a[STEPS]] == [("make", 1)]
    assert kept(doc)[("call", "c")] == "unobserved"


def test_removal_merges_the_contents_it_brings_together_and_leaves_none_empty() -> None:
    doc = body(
        user("go"),
        model(text("First."), shell("a", "ls")),
        user(res("a", output=SHELL_OK)),
        model(text("Second."), call("t", "write_todos", todos=[])),
        user(res("t", "write_todos")),
    )
    a = after(doc)
    assert a["contents"] == [
        user("go"),
        model(text("First."), text("Second."), call("t", "write_todos", todos=[])),
        user(res("t", "write_todos")),
    ]
    assert all(c["parts"] for c in a["contents"])


def test_a_request_that_ended_on_the_user_never_ends_on_a_model_content() -> None:
    doc = body(
        user("go"),
        model(shell("z", "pwd")),
        user(res("z", output=SHELL_OK.replace("ls", "pwd"))),
        model(text("Now the listing."), shell("a", "ls")),
        user(res("a", output=SHELL_OK)),
    )
    a = after(doc)
    assert a["contents"] == [user("go"), *doc["contents"][3:]]
    assert (cmdlines(a), a[DELTA]) == (["pwd"], 1)
    assert kept(doc)[("call", "a")] == "validity"
    # All of it going leaves the user's content last: nothing to pin.
    doc = body(user("go"), model(shell("a", "ls")), user(res("a", output=SHELL_OK)))
    a = after(doc)
    assert (a["contents"], a[DELTA]) == ([user("go")], 0)


def test_the_end_is_judged_on_the_history_the_signature_pins_leave() -> None:
    """A signed call whose content keeps a text part stays; with that content kept, the later
    rounds can all go and the request still ends on the user's content: nothing is pinned for
    the end (judging the end while the signed call was still going pinned the last round for
    nothing, and a resumed conversation, cut after the kept content, stepped it: found by
    tests/test_properties_dialects.py::test_idempotent)."""
    doc = body(
        user("start"),
        model(text("thinking aloud"), shell("a", "echo 1", SIG)),
        user(res("a", output=SHELL_OK)),
        model(shell("b", "echo 2")),
        user(res("b", output=SHELL_OK.replace("ls", "echo 2"))),
        model(shell("c", "echo 3")),
        user(res("c", output=SHELL_OK.replace("ls", "echo 3"))),
    )
    a = after(doc)
    assert cmdlines(a) == ["echo 2", "echo 3"]
    assert a["contents"] == doc["contents"][:3]
    assert kept(doc)[("call", "a")] == "validity" and ("call", "c") not in kept(doc)


def test_delta_and_pending_build_agree() -> None:
    doc = body(
        user("go"),
        model(shell("a", "ls")),
        user(res("a", output=SHELL_OK)),
        model(shell("b", "pwd"), shell("c", "id")),
        user(res("b", output=SHELL_OK), res("c", output=SHELL_OK)),
    )
    h = gemini.read(doc)
    a = after(doc)
    assert a[DELTA] == 1
    assert [step_json(s) for s in build_pending(h)] == a[STEPS][1:]


def test_idempotent_and_the_memo_gives_the_same_bytes() -> None:
    turns = [user("go")]
    memo = Memo()
    for n in range(6):
        turns += [model(text(f"Step {n}."), shell(f"c{n}", f"echo {n}")), user(res(f"c{n}", output=SHELL_OK))]
        doc = body(*turns)
        with_memo = rw(doc, memo=memo)
        alone = rw(doc)
        assert (with_memo.status, with_memo.body, with_memo.steps) == (alone.status, alone.body, alone.steps)
        if alone.body is not None:
            assert rw(alone.body).status == "skipped"
    assert memo.errors == 0 and memo.hits > 0
