"""The bundled Responses session (tests/fixtures/sessions/responses_session.json): a Codex CLI
request body for POST /v1/responses.

    .venv/bin/python scripts/make_sessions.py responses   # writes it

The session fixes a rounding bug in a small Go project ("ledger": splitting 10.00
three ways loses a cent). Deterministic: the same script gives the same bytes.

It is shaped as Codex CLI sends it (research notes /tmp/research/formats-a.md §2,
from openai/codex codex-rs): ``instructions``, ``input`` items with a developer
message, user ``input_text`` messages (AGENTS.md, environment context, the task),
``reasoning`` items with ``encrypted_content``, assistant ``message`` items, and
the tool items with their results exactly as Codex formats them:

- ``shell`` (argv array + ``workdir``): output is the JSON string
  ``{"output": ..., "metadata": {"exit_code": N, "duration_seconds": S}}``;
- ``shell_command``: ``Exit code: N`` / ``Wall time:`` / ``Output:`` text;
- ``exec_command``: ``Process exited with code N``, and one still running
  (``Process running with session ID N``), polled with ``write_stdin``;
- ``local_shell_call`` answered by a ``function_call_output`` (as Codex does);
- ``custom_tool_call`` ``apply_patch`` (no lossless step: stays in the input);
- ``update_plan``; a rejected command; a timeout (124); a signal;
- and a pending round at the end (reasoning, two calls, their outputs).
"""

from __future__ import annotations

import json
from typing import Any

from ..responses import function_call, message
from ..responses import output as call_output
from . import FIXTURES, digest, encode

OUT = FIXTURES / "responses_session.json"
ROOT = "/home/dev/src/ledger"
SESSION_ID = "0199b2f4-7c3e-7d21-9a55-3f0c6e2b8d41"

INSTRUCTIONS = """You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user's \
computer.

## General

- When searching for text or files, prefer using `rg` or `rg --files` respectively because `rg` is much faster \
than alternatives like `grep`.

## Editing constraints

- Default to ASCII when editing or creating files.
- You may be in a dirty git worktree. NEVER revert existing changes you did not make unless explicitly requested.
- Use the apply_patch tool to edit files (NEVER try `applypatch` or `apply-patch`, only `apply_patch`).

## Plan tool

When using the planning tool:
- Skip using the planning tool for straightforward tasks (roughly the easiest 25%).
- Do not make single-step plans.
- When you made a plan, update it after having performed one of the sub-tasks that you shared on the plan.

## Sandboxing and approvals

The Codex CLI harness supports several different configurations for sandboxing and escalation approvals that the \
user can choose from. When you need to run a command that requires approval, request it with the \
`sandbox_permissions` and `justification` parameters; do not message the user before requesting approval.

## Presenting your work and final message

You are producing plain text that will later be styled by the CLI. Be concise; mention file paths with line \
numbers when they help the user find the change."""

PERMISSIONS = """<permissions instructions>
Filesystem sandboxing defines which files can be read or written. `sandbox_mode` is `workspace-write`: The \
sandbox permits reading files, and editing files in `cwd` and `writable_roots`. Editing files in other \
directories requires approval. Network access is restricted.
Approvals are your mechanism to get user consent to run shell commands without the sandbox. \
`approval_policy` is `on-request`: Commands will be run in the sandbox by default, and you can specify in your \
tool call if you want to escalate a command to run without sandboxing.
</permissions instructions>"""

AGENTS_MD = f"""# AGENTS.md instructions for {ROOT}

<INSTRUCTIONS>
- Go 1.23. Run `go test ./...` and `go vet ./...` before finishing.
- Money is int64 cents everywhere; never use float64 for amounts.
- Do not push or create branches; the user reviews and commits.
</INSTRUCTIONS>"""

ENVIRONMENT = f"""<environment_context>
  <cwd>{ROOT}</cwd>
  <approval_policy>on-request</approval_policy>
  <sandbox_mode>workspace-write</sandbox_mode>
  <network_access>restricted</network_access>
  <shell>bash</shell>
</environment_context>"""

SPLIT_GO = """package money

// Split divides an amount in cents into n shares.
func Split(total int64, n int) []int64 {
\tshares := make([]int64, n)
\tfor i := range shares {
\t\tshares[i] = total / int64(n)
\t}
\treturn shares
}
"""

PATCH = """*** Begin Patch
*** Update File: internal/money/split.go
@@
-// Split divides an amount in cents into n shares.
+// Split divides an amount in cents into n shares that add up to total:
+// the first total%n shares get one cent more.
 func Split(total int64, n int) []int64 {
 \tshares := make([]int64, n)
+\trest := total % int64(n)
 \tfor i := range shares {
 \t\tshares[i] = total / int64(n)
+\t\tif int64(i) < rest {
+\t\t\tshares[i]++
+\t\t}
 \t}
 \treturn shares
 }
*** Add File: internal/money/split_test.go
+package money
+
+import "testing"
+
+func TestSplitKeepsEveryCent(t *testing.T) {
+\tgot := Split(1000, 3)
+\tif got[0]+got[1]+got[2] != 1000 || got[0] != 334 {
+\t\tt.Fatalf("Split(1000, 3) = %v", got)
+\t}
+}
*** End Patch"""

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "name": "shell", "description": "Runs a shell command and returns its output.",
     "strict": False, "parameters": {"type": "object", "properties": {
         "command": {"type": "array", "items": {"type": "string"}, "description": "The command to execute"},
         "workdir": {"type": "string", "description": "The working directory to execute the command in"},
         "timeout_ms": {"type": "number", "description": "The timeout for the command in milliseconds"},
         "sandbox_permissions": {"type": "string"},
         "justification": {"type": "string"}}, "required": ["command"], "additionalProperties": False}},
    {"type": "function", "name": "shell_command",
     "description": "Runs a shell command string in the user's default shell and returns its output.", "strict": False,
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string"}, "workdir": {"type": "string"}, "timeout_ms": {"type": "number"}},
         "required": ["command"], "additionalProperties": False}},
    {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY, returning output or a "
     "session ID for ongoing interaction.", "strict": False,
     "parameters": {"type": "object", "properties": {
         "cmd": {"type": "string"}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"},
         "max_output_tokens": {"type": "number"}}, "required": ["cmd"], "additionalProperties": False}},
    {"type": "function", "name": "write_stdin", "description": "Writes characters to an existing unified exec "
     "session and returns recent output.", "strict": False,
     "parameters": {"type": "object", "properties": {
         "session_id": {"type": "number"}, "chars": {"type": "string"}, "yield_time_ms": {"type": "number"}},
         "required": ["session_id"], "additionalProperties": False}},
    {"type": "function", "name": "read_file", "description": "Reads a local file with 1-indexed line numbers.",
     "strict": False, "parameters": {"type": "object", "properties": {
         "file_path": {"type": "string"}, "offset": {"type": "number"}, "limit": {"type": "number"}},
         "required": ["file_path"], "additionalProperties": False}},
    {"type": "function", "name": "update_plan", "description": "Updates the task plan.", "strict": False,
     "parameters": {"type": "object", "properties": {
         "explanation": {"type": "string"},
         "plan": {"type": "array", "items": {"type": "object", "properties": {
             "step": {"type": "string"}, "status": {"type": "string"}}, "required": ["step", "status"],
             "additionalProperties": False}}}, "required": ["plan"], "additionalProperties": False}},
    {"type": "custom", "name": "apply_patch", "description": "Use the `apply_patch` tool to edit files. This is a "
     "FREEFORM tool, so do not wrap the patch in JSON.",
     "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch\n"
                "begin_patch: \"*** Begin Patch\" LF\nend_patch: \"*** End Patch\" LF?\n"}},
    {"type": "local_shell"},
    {"type": "web_search"},
]  # fmt: skip


def shell_json(output: str, exit_code: int, seconds: float) -> str:
    """Codex `shell` / `local_shell` output (format_exec_output_for_model_structured), serde_json's compact form."""
    return json.dumps(
        {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": seconds}}, separators=(",", ":")
    )


def freeform(exit_code: int, seconds: float, output: str) -> str:
    """Codex `shell_command` output (format_exec_output_for_model_freeform)."""
    return f"Exit code: {exit_code}\nWall time: {seconds} seconds\nOutput:\n{output}"


def unified(chunk: str, seconds: float, status: str, tokens: int, output: str) -> str:
    """Codex `exec_command` / `write_stdin` output (ExecCommandToolOutput::response_text)."""
    head = f"Chunk ID: {chunk}\nWall time: {seconds:.4f} seconds\n{status}\nOriginal token count: {tokens}"
    return f"{head}\nOutput:\n{output}"


class Session:
    def __init__(self) -> None:
        self.input: list[dict[str, Any]] = []
        self.n = 0

    def add(self, *items: dict[str, Any]) -> None:
        self.input.extend(items)

    def reasoning(self, summary: str) -> dict[str, Any]:
        self.n += 1
        return {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": "gAAAAABo" + digest(f"reasoning-{self.n}", 240, urlsafe=True),
        }

    def call_id(self) -> str:
        self.n += 1
        return "call_" + "".join(c for c in digest(f"call-{self.n}", 40, urlsafe=True) if c.isalnum())[:24]

    def round(self, summary: str | tuple[str, ...] | None, *calls: tuple[str, Any, str]) -> list[str]:
        """One model response (reasoning, then its calls) and the outputs the client sent back.

        A call is (kind, arguments, output): kind "function:<name>", "custom:<name>" or "local_shell".
        A tuple of summaries puts one reasoning item before each call (interleaved thinking).
        """
        summaries = summary if isinstance(summary, tuple) else (summary,) + (None,) * (len(calls) - 1)
        ids, outputs = [], []
        for (kind, args, output), think in zip(calls, summaries, strict=True):
            if think:
                self.add(self.reasoning(think))
            cid = self.call_id()
            ids.append(cid)
            if kind == "local_shell":
                item = {
                    "type": "local_shell_call",
                    "call_id": cid,
                    "status": "completed",
                    "action": {"type": "exec", **args},
                }
                out_type = "function_call_output"  # Codex answers local_shell_call with a function_call_output
            elif kind.startswith("custom:"):
                item = {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": cid,
                    "name": kind[7:],
                    "input": args,
                }
                out_type = "custom_tool_call_output"
            else:
                item = function_call(kind[9:], json.dumps(args), cid)
                out_type = "function_call_output"
            self.add(item)
            outputs.append(call_output(cid, output, out_type))
        self.add(*outputs)
        return ids  # fmt: skip


def shell(script: str, **extra: Any) -> dict[str, Any]:
    return {"command": ["bash", "-lc", script], "workdir": ROOT, **extra}


def build() -> dict[str, Any]:
    s = Session()
    s.add(
        message("developer", PERMISSIONS),
        message("user", AGENTS_MD),
        message("user", ENVIRONMENT),
        message(
            "user",
            "Splitting a 10.00 bill three ways with `ledger split 10.00 3` prints 3.33 three times, so a cent "
            "disappears. Fix Split so the shares always add up, with a test.",
        ),
    )
    files = "\n".join(
        ["cmd/ledger/main.go", "go.mod", "internal/money/format.go", "internal/money/format_test.go",
         "internal/money/split.go", "internal/report/report.go", "scripts/check.sh"]
    )  # fmt: skip
    s.round("**Exploring the repository**", ("function:shell", shell("rg --files"), shell_json(files + "\n", 0, 0.0)))
    hits = (
        "internal/money/split.go:4:func Split(total int64, n int) []int64 {\n"
        "cmd/ledger/main.go:41:\t\tshares := money.Split(cents, n)\n"
    )
    s.round(
        "**Searching for Split callers**",
        ("function:shell", shell("rg -n 'Split\\(' -g '*.go'"), shell_json(hits, 0, 0.1)),
    )
    numbered = "\n".join(f"L{i}: {line}" for i, line in enumerate(SPLIT_GO.splitlines(), 1))
    s.round(
        None,
        ("function:read_file", {"file_path": f"{ROOT}/internal/money/split.go", "offset": 1, "limit": 200}, numbered),
    )
    s.add(message("assistant", "Split truncates every share; the remainder (total % n) is dropped."))
    plan = [
        {"step": "Reproduce the lost cent", "status": "in_progress"},
        {"step": "Distribute the remainder in Split", "status": "pending"},
        {"step": "Add a regression test and run go test/vet", "status": "pending"},
    ]
    s.round(None, ("function:update_plan", {"explanation": "Small fix plus test.", "plan": plan}, "Plan updated"))
    s.round(
        "**Reproducing with the CLI**",
        ("function:shell_command", {"command": "go run ./cmd/ledger split 10.00 3", "workdir": ROOT},
         freeform(0, 0.9, "3.33\n3.33\n3.33\n")),
    )  # fmt: skip
    test_fail = (
        '--- FAIL: TestFormat (0.00s)\n    format_test.go:18: Format(-5) = "-0.5", want "-0.05"\nFAIL\n'
        "FAIL\tgithub.com/dev/ledger/internal/money\t0.004s\nok  \tgithub.com/dev/ledger/internal/report\t0.003s\n"
    )
    s.round(
        "**Running the test suite**",
        ("function:shell", shell("go test ./..."), shell_json(test_fail, 1, 2.3)),
    )
    # The client's own header says 0; the script's log mentions an exit code of its own.
    check_out = "[check] gofmt: ok\n[check] staticcheck: exit code 3 (not installed, skipped)\n[check] done\n"
    s.round(
        "**Checking the project's lint script**",
        ("function:shell_command", {"command": "./scripts/check.sh", "workdir": ROOT}, freeform(0, 1.4, check_out)),
    )
    s.add(message("assistant", "TestFormat already fails on main (negative amounts); unrelated. Fixing Split."))
    s.round(
        "**Patching Split**",
        ("custom:apply_patch", PATCH, "Success. Updated the following files:\nM internal/money/split.go\n"
                                      "A internal/money/split_test.go\n"),
    )  # fmt: skip
    s.round(
        None,
        ("function:exec_command", {"cmd": "go test ./internal/money -run TestSplit -v", "workdir": ROOT,
                                   "yield_time_ms": 10000},
         unified("5c1f2e", 1.2046, "Process exited with code 0", 24,
                 "=== RUN   TestSplitKeepsEveryCent\n--- PASS: TestSplitKeepsEveryCent (0.00s)\nPASS\n"
                 "ok  \tgithub.com/dev/ledger/internal/money\t0.003s\n")),
    )  # fmt: skip
    s.round(
        "**Trying the HTTP endpoint**",
        ("function:exec_command", {"cmd": "go run ./cmd/ledger serve --addr 127.0.0.1:8089", "workdir": ROOT,
                                   "yield_time_ms": 1500},
         unified("a41d07", 1.5013, "Process running with session ID 41577", 9,
                 "ledger: listening on 127.0.0.1:8089\n")),
    )  # fmt: skip
    s.round(
        None,
        ("local_shell", {"command": ["bash", "-lc", "curl -s '127.0.0.1:8089/split?amount=10.00&n=3'"],
                         "working_directory": ROOT, "timeout_ms": 10000, "env": {}},
         shell_json('{"shares":["3.34","3.33","3.33"]}\n', 0, 0.1)),
    )  # fmt: skip
    s.round(
        None,
        ("function:write_stdin", {"session_id": 41577, "chars": "\u0003", "yield_time_ms": 1000},
         unified("e90b44", 0.2511, "Process exited with code 130", 2, "^C\n")),
    )  # fmt: skip
    s.round(
        "**Running the slow integration tests**",
        ("function:shell", shell("go test -tags integration ./...", timeout_ms=10000),
         shell_json("command timed out after 10012 milliseconds\n=== RUN   TestImportBankCSV\n", 124, 10.0)),
    )  # fmt: skip
    s.round(
        None,
        ("function:shell", shell("go test -race ./internal/...", sandbox_permissions="require_escalated",
                                 justification="The race detector needs to write to the Go build cache"),
         "exec command rejected by user"),
    )  # fmt: skip
    s.add(message("user", "No escalation please. The race run is for CI; plain go test and vet are enough."))
    s.round(
        "**Vetting**",
        ("function:shell", shell("go vet ./... && ./bin/fuzz-split -n 200000"),
         "execution error: Sandbox(Signal(9))"),
    )  # fmt: skip
    s.round(None, ("function:shell", shell("go vet ./..."), shell_json("", 0, 1.8)))
    s.round(
        None,
        ("function:exec_command", {"cmd": "go test ./internal/money", "workdir": ROOT},
         unified("0b7a93", 0.8121, "Process exited with code 1", 31, test_fail.split("ok  ")[0])),
    )  # fmt: skip
    plan = [{"step": p["step"], "status": "completed"} for p in plan]
    s.round(None, ("function:update_plan", {"plan": plan}, "Plan updated"))
    s.add(
        message(
            "assistant",
            "Split now hands the remainder to the first shares (10.00/3 = 3.34, 3.33, 3.33) and "
            "`TestSplitKeepsEveryCent` covers it. `TestFormat` still fails on negative amounts; that was "
            "already broken before this change.",
        ),
        message("user", "Thanks. Show me the diff stat and run the money tests once more."),
    )
    # The pending round: the newest model response, followed only by its outputs.
    s.round(
        ("**Summarizing the change**", "**Re-running the money tests**"),
        ("function:shell_command", {"command": "git diff --stat", "workdir": ROOT},
         freeform(0, 0.1, " internal/money/split.go      |  6 +++++-\n internal/money/split_test.go | 10 ++++++++++\n"
                          " 2 files changed, 15 insertions(+), 1 deletion(-)\n")),
        ("function:exec_command", {"cmd": "go test ./internal/money -run TestSplit", "workdir": ROOT},
         unified("7d2c55", 0.6604, "Process exited with code 0", 6,
                 "ok  \tgithub.com/dev/ledger/internal/money\t0.003s\n")),
    )  # fmt: skip
    return {
        "model": "gpt-5-codex",
        "instructions": INSTRUCTIONS,
        "input": s.input,
        "tools": TOOLS,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": SESSION_ID,
    }


def render() -> bytes:
    return encode(build())
