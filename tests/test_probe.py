"""The known-defect probe table: one test per row, each asserting the required behaviour.

| probe                                                  | known gateway        | required                        |
| assistant `Bash` call with no result -> steps          | 1 (DONE)             | 0                               |
| `Bash` result `Exit code: 2\\nOutput:...` -> exit_code | 0                    | 2                               |
| same -> separate `stdout` field                        | present              | absent (combined_output.full)   |
| building a step without an observation                 | returns a DONE step  | refused                         |
| reuse build vs full.steps[delta_start:]                | history re-sent      | identical                       |
"""

from __future__ import annotations

import orjson
import pytest
from chatkit import assistant, bash, body, build_pending, history, raw, tool, user
from native_bridge import rewrite
from native_bridge.core.builder import build
from native_bridge.core.encoder import UnobservedCallError, encode_step
from native_bridge.core.kinds import KINDS

FAILED_LS = "Exit code: 2\nOutput:\nls: cannot access /nope"


def failed_ls_body() -> dict:
    return body(user("list /nope"), assistant(bash("call_1", "ls /nope")), tool("call_1", FAILED_LS))


def test_probe_bash_call_without_result_gives_no_step() -> None:
    doc = body(user("clean up"), assistant(bash("call_1", "rm -rf build")))
    h = history(*doc["messages"])
    assert build(h).steps == []
    r = rewrite(raw(doc), path="/v1/chat/completions")
    assert r.status != "rewritten"
    assert r.steps == []
    assert r.summary()["unobserved"] == 1


def test_probe_failed_bash_keeps_exit_code_2() -> None:
    # Codex's words ("Exit code: N" above "Output:"), from Codex: its user agent says so.
    r = rewrite(raw(failed_ls_body()), path="/v1/chat/completions", client_hint="codex_exec/0.171.0")
    assert r.status == "rewritten"
    (step,) = orjson.loads(r.body or b"")["additional_steps"]
    assert step["runCommand"]["exitCode"] == 2
    assert r.summary()["failed_exit_codes"] == [2]


def test_probe_failed_bash_output_only_in_combined_output() -> None:
    r = rewrite(raw(failed_ls_body()), path="/v1/chat/completions", client_hint="codex_exec/0.171.0")
    (step,) = orjson.loads(r.body or b"")["additional_steps"]
    run = step["runCommand"]
    assert "stdout" not in run
    assert "stderr" not in run
    assert run["combinedOutput"] == {"full": FAILED_LS}
    # The reference fix's probe exactly, from a client that cannot be named: the same 2 (issue 17).
    (step,) = orjson.loads(rewrite(raw(failed_ls_body()), path="/v1/chat/completions").body or b"")["additional_steps"]
    assert step["runCommand"]["exitCode"] == 2
    assert r.plan is not None
    assert r.plan.steps[0].run_command.stdout == ""


def test_probe_step_without_observation_is_refused() -> None:
    with pytest.raises(UnobservedCallError):
        encode_step(KINDS["run_command"], {"command_line": "ls /nope", "blocking": True}, None)


def test_probe_reuse_build_equals_delta_slice_not_whole_history() -> None:
    h = history(
        user("start"),
        assistant(bash("c1", "ls")),
        tool("c1", "a.py"),
        assistant(bash("c2", "cat a.py")),
        tool("c2", "print(1)"),
        assistant(bash("c3", "python a.py"), bash("c4", "ls /nope")),
        tool("c3", "1"),
        tool("c4", FAILED_LS),
    )
    full = build(h)
    assert len(full.steps) == 4
    assert full.delta_start == 2
    pending = build_pending(h)
    assert [s.SerializeToString(deterministic=True) for s in pending] == [
        s.SerializeToString(deterministic=True) for s in full.steps[full.delta_start :]
    ]
    assert [s.run_command.command_line for s in pending] == ["python a.py", "ls /nope"]
