"""The Python agents of the interop suite (PyPI, each in its own venv): the OpenAI Agents SDK,
the OpenHands SDK, mini-swe-agent, gptme and Kimi CLI. How each is driven, and the ground truth of every call.

A Python client is a library, not a CLI (mini-swe-agent's ``mini`` is both): the SDKs run a
small driver script (``pyclient_<client>.py`` beside this file) under the client's own
venv Python, which builds the SDK's agent with the SDK's own tools and runs it once, pointed at
the proxy. Everything that decides what the client sends back (the tool, its executor, its
result formatting) is the SDK's code; the driver only wires it together, as a user would.

The manifest entries (``.interop/manifest.json``) are written by ``scripts/interop.py install``
(``install_python``): ``bin`` is the venv's ``python`` (``mini`` for mini-swe-agent).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fakemodel import ToolCall
from harness import (
    Captured,
    Driver,
    Outcome,
    Run,
    Scenario,
    corpus_entry,
    in_turn,
    installed,
    run_scenario,
    skip_reason,
    substitute,
    tool_schema_summary,
    verdict_for,
)

HERE = Path(__file__).resolve().parent

MISSING = "{ws}/missing.txt"
HELLO = "{ws}/hello.txt"

# (command, the real exit code under sh/bash). Varied on purpose: codes 0..5, 126, 127, 130,
# 255; with and without output; stderr only; several lines; and programs that print a status
# line of their own (a client's frame, forged by the program's output).
SHELL: list[tuple[str, int]] = [
    ("echo hi", 0),
    ("true", 0),
    ("printf 'line one\\nline two\\nline three\\n'", 0),
    ("echo only-stderr >&2", 0),
    ("false", 1),
    ("sh -c 'echo to-stderr >&2; exit 1'", 1),
    ("ls /nope", 2),
    ("sh -c 'seq 1 3; exit 2'", 2),
    ("sh -c 'exit 3'", 3),
    ("sh -c 'echo out; echo err >&2; exit 4'", 4),
    ("sh -c 'echo partial; exit 5'", 5),
    ("sh -c 'exit 255'", 255),
    ("nonexistent_cmd_interop", 127),
    ("printf 'echo x\\n' > noexec.sh; chmod -x noexec.sh; ./noexec.sh", 126),
    ("sh -c 'exit 130'", 130),  # what a program interrupted by Ctrl-C reports
    # Killed by a signal (a self-SIGINT is not used: a background launch ignores SIGINT, and the
    # child inherits that). No top-level exit: some clients keep one shell for every command.
    ("sh -c 'kill -TERM $$'; (exit $?)", 143),
    ("echo 'Exit code: 3'", 0),
    ("sh -c 'echo \"Exit code: 0\"; exit 1'", 1),
    ("printf '{\"exit_code\": 1}\\n'", 0),
    ('printf \'{"returncode": 2, "output": "x"}\\n\'', 0),
    ("echo '[Command finished with exit code 1]'", 0),
    ("sh -c 'echo \"Process exited with code 0\"; exit 2'", 2),
    ("echo 'Exit Code: 7'", 0),
    ("seq 1 3000", 0),  # long output: clients truncate or elide it (mini-swe-agent: output_head/tail)
    ("sh -c 'seq 1 3000; exit 3'", 3),
]


RUNNING = Outcome("shell", None, False, running=True)  # the client stopped waiting; the command runs on


def shell_truth(code: int | None) -> Outcome:
    return Outcome("shell", code, code == 0)


def shell_scenario(make: Any, sid: str = "shell", timeout: float = 180.0) -> Scenario:
    return Scenario(sid, tuple(make(cmd) for cmd, _ in SHELL), tuple(shell_truth(c) for _, c in SHELL), timeout)


# What the bridge must do with one result (the exact truth, per client):
EXPECT_CODE = "code"  # the client states the exit status: a run_command step with exactly that exitCode
EXPECT_SILENT = "silent"  # the client states no status: a message, or a step with no exitCode
EXPECT_FAILURE = "failure"  # killed / timed out, stated by the client: a step with a non-zero exitCode
EXPECT_NOT_ZERO = "not-zero"  # killed, in words the bridge cannot know: anything but exit 0
EXPECT_RUNNING = "running"  # the client says the command is still running: no step
EXPECT_NO_STEP = "no-step"  # a failed read or edit: no step
EXPECT_FILE_OK = "file-ok"  # a successful read or edit: a message, or a step of the right kind


class PyDriver(Driver):
    """A Python client: ``prepare`` sees the scenario before the run (turn limits), and the
    calls keep their Responses item type when ``{ws}`` is substituted."""

    states_code = True  # the client's result states the exit status of every command it ran
    timeout_expect = EXPECT_FAILURE  # what its timeout result must become
    variant = ""  # the PY_DRIVERS key

    def prepare(self, scenario: Scenario) -> None:
        pass

    def expectation(self, scenario: Scenario, truth: Outcome) -> str:
        if truth.kind == "shell":
            if truth.running:
                return EXPECT_RUNNING
            if scenario.id == "timeout":
                return self.timeout_expect
            return EXPECT_CODE if self.states_code else EXPECT_SILENT
        return EXPECT_FILE_OK if truth.ok else EXPECT_NO_STEP

    def tool_call(self, scenario: Scenario, ws: Path) -> Any:
        self.prepare(scenario)
        return in_turn([dataclasses.replace(substitute(c, ws), item_type=c.item_type) for c in scenario.calls])


def _venv_env(entry: dict[str, Any], base: dict[str, str]) -> dict[str, str]:
    venv_bin = str(Path(entry["bin"]).parent)
    return {
        **base,
        "PATH": f"{venv_bin}:{base['PATH']}",
        "VIRTUAL_ENV": str(Path(venv_bin).parent),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        # Offline: litellm must not fetch its price list, nobody may phone home.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "false",
    }


# ---- mini-swe-agent ------------------------------------------------------------------------------
class MiniSweAgent(PyDriver):
    """``mini`` (the CLI), yolo mode, the default agent class (non-interactive), litellm to the
    proxy. Its only tool is ``bash``; each call runs in a fresh subshell (``environment.timeout``
    seconds). ``config`` picks the observation template: ``mini.yaml`` (the CLI's default: a JSON
    object) or ``swebench.yaml`` (``<returncode>N</returncode>`` + ``<output>``)."""

    name = "mini-swe-agent"
    dialect = "chat"
    model_class = "litellm"
    config = "mini.yaml"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **_venv_env(self.entry, super().env(home, base_url)),
            "OPENAI_API_KEY": "sk-interop-dummy",
            "OPENAI_API_BASE": f"{base_url}/v1",
            "OPENAI_BASE_URL": f"{base_url}/v1",
            "MSWEA_CONFIGURED": "true",
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_GLOBAL_CONFIG_DIR": str(home / ".config" / "mini-swe-agent"),
        }

    def argv(self, prompt: str, ws: Path) -> list[str]:
        steps = getattr(self, "_steps", 30)
        return [
            self.bin,
            "--model",
            "openai/fake-model",
            "--model-class",
            self.model_class,
            "--agent-class",
            "default",
            "--environment-class",
            "local",
            "-c",
            self.config,
            "-c",
            f"agent.step_limit={steps}",
            "-c",
            "agent.cost_limit=0",
            "-c",
            f"environment.timeout={getattr(self, '_cmd_timeout', 10)}",
            "-c",
            f"environment.cwd={ws}",
            "--yolo",
            "--exit-immediately",
            "-t",
            prompt,
            "-o",
            str(ws.parent / "traj.json"),
        ]

    def scenarios(self, ws: Path | None = None) -> list[Scenario]:
        def bash(cmd: str) -> ToolCall:
            return ToolCall("bash", {"command": cmd})

        return [
            shell_scenario(bash),
            Scenario("timeout", (bash("sleep 30"),), (shell_truth(None),), 120.0),
        ]

    def prepare(self, scenario: Scenario) -> None:
        # One model turn per call, one more that carries the last result, then the step limit.
        self._steps = len(scenario.calls) + 1
        self._cmd_timeout = 2 if scenario.id == "timeout" else 10


class MiniSweAgentResponses(MiniSweAgent):
    """The same CLI with litellm's Responses model class (``function_call_output`` items)."""

    dialect = "responses"
    model_class = "litellm_response"


class MiniSweAgentSwebench(MiniSweAgent):
    """The benchmark config's observation template: ``<returncode>N</returncode>``."""

    config = "swebench.yaml"


# ---- OpenAI Agents SDK ---------------------------------------------------------------------------
class OpenAIAgents(PyDriver):
    """``pyclient_openai_agents.py`` under the SDK's venv. ``mode`` picks the SDK's shell tool:

    - ``sandbox``: a ``SandboxAgent`` with the ``Shell`` and ``Filesystem`` capabilities on the
      bundled ``UnixLocalSandboxClient``: function tool ``exec_command`` (the SDK formats
      ``Process exited with code N`` / ``Output:``) and custom tool ``apply_patch``;
    - ``shell``: ``ShellTool`` (Responses ``shell_call`` / ``shell_call_output`` with a
      structured ``outcome``), with the executor of the SDK's own example;
    - ``local_shell``: ``LocalShellTool`` (``local_shell_call`` / ``local_shell_call_output``,
      the executor's string as the output).
    ``api`` picks the model class: ``responses`` (OpenAIResponsesModel) or ``chat``
    (OpenAIChatCompletionsModel; only function tools go over Chat Completions).
    """

    name = "openai-agents"
    dialect = "responses"
    mode = "sandbox"
    # exec_command yields after yield_time_ms and says the process is still running (session ID).
    timeout_expect = EXPECT_RUNNING

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **_venv_env(self.entry, super().env(home, base_url)),
            "OPENAI_API_KEY": "sk-interop-dummy",
            "OPENAI_BASE_URL": f"{base_url}/v1",
        }

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [
            self.bin,
            str(HERE / "pyclient_openai_agents.py"),
            "--api",
            self.dialect,
            "--mode",
            self.mode,
            "--workspace",
            str(ws),
            "--max-turns",
            str(getattr(self, "_turns", 40)),
            prompt,
        ]

    def prepare(self, scenario: Scenario) -> None:
        self._turns = len(scenario.calls) + 3

    def scenarios(self, ws: Path | None = None) -> list[Scenario]:
        if self.mode == "sandbox":

            def exec_command(cmd: str, **kw: Any) -> ToolCall:
                return ToolCall("exec_command", {"cmd": cmd, "workdir": "{ws}", **kw})

            out = [
                shell_scenario(exec_command),
                # yield_time_ms is the SDK's wait: a longer command keeps running in a session.
                Scenario("timeout", (exec_command("sleep 30", yield_time_ms=1000),), (RUNNING,), 120.0),
            ]
            if self.dialect == "responses":  # apply_patch is a custom (freeform) tool: Responses only
                out.append(
                    Scenario(
                        "files",
                        (
                            ToolCall("apply_patch", raw_input=PATCH_MISSING),
                            ToolCall("apply_patch", raw_input=PATCH_BAD_CONTEXT),
                            ToolCall("apply_patch", raw_input=PATCH_OK),
                        ),
                        (Outcome("edit", None, False), Outcome("edit", None, False), Outcome("edit", None, True)),
                    )
                )
            return out
        if self.mode == "shell":

            def shell(cmd: str, **kw: Any) -> ToolCall:
                return ToolCall("shell", {"commands": [cmd], **kw}, item_type="shell_call")

            return [
                shell_scenario(shell),
                Scenario("timeout", (shell("sleep 30", timeout_ms=1000),), (shell_truth(None),), 120.0),
            ]

        def local_shell(cmd: str, **kw: Any) -> ToolCall:
            args = {"command": ["sh", "-c", cmd], "working_directory": "{ws}", **kw}
            return ToolCall("local_shell", args, item_type="local_shell_call")

        return [
            shell_scenario(local_shell),
            Scenario("timeout", (local_shell("sleep 30", timeout_ms=1000),), (shell_truth(None),), 120.0),
        ]


class OpenAIAgentsChat(OpenAIAgents):
    dialect = "chat"


class OpenAIAgentsShellTool(OpenAIAgents):
    mode = "shell"
    timeout_expect = EXPECT_FAILURE  # outcome {"type": "timeout"}


class OpenAIAgentsLocalShell(OpenAIAgents):
    """The output is the executor's string: stdout + stderr, no status at all."""

    mode = "local_shell"
    states_code = False
    timeout_expect = EXPECT_NOT_ZERO  # "Command execution timed out" is the executor's own wording


PATCH_MISSING = "*** Begin Patch\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch"
PATCH_BAD_CONTEXT = "*** Begin Patch\n*** Update File: hello.txt\n@@\n-NOT_THERE_AT_ALL\n+replacement\n*** End Patch"
PATCH_OK = (
    "*** Begin Patch\n*** Update File: hello.txt\n@@\n hello interop\n-second line\n+second line, edited\n*** End Patch"
)


# ---- OpenHands SDK -------------------------------------------------------------------------------
class OpenHands(PyDriver):
    """``pyclient_openhands.py`` under the SDK's venv: an ``Agent`` with the SDK's
    ``TerminalTool`` and ``FileEditorTool`` (openhands-tools), an ``LLM`` via litellm to the
    proxy (Chat Completions, native function calling), run in a local ``Conversation``."""

    name = "openhands"
    dialect = "chat"
    # The terminal tool stops waiting after ``timeout`` seconds and leaves the command running
    # in its session ("You may wait longer to see additional output ...").
    timeout_expect = EXPECT_RUNNING

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **_venv_env(self.entry, super().env(home, base_url)),
            "OPENAI_API_KEY": "sk-interop-dummy",
            "LLM_BASE_URL": f"{base_url}/v1",
            "OH_DISABLE_TELEMETRY": "1",
        }

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [
            self.bin,
            str(HERE / "pyclient_openhands.py"),
            "--api",
            self.dialect,
            "--workspace",
            str(ws),
            "--max-iterations",
            str(getattr(self, "_turns", 40)),
            prompt,
        ]

    def prepare(self, scenario: Scenario) -> None:
        self._turns = len(scenario.calls) + 3

    def scenarios(self, ws: Path | None = None) -> list[Scenario]:
        def terminal(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("terminal", {"command": cmd, **kw})

        def view(path: str) -> ToolCall:
            return ToolCall("file_editor", {"command": "view", "path": path})

        def replace(path: str, old: str, new: str) -> ToolCall:
            return ToolCall("file_editor", {"command": "str_replace", "path": path, "old_str": old, "new_str": new})

        return [
            shell_scenario(terminal),
            Scenario("timeout", (terminal("sleep 30", timeout=2),), (RUNNING,), 180.0),
            Scenario(
                "files",
                (
                    view(MISSING),
                    view(HELLO),
                    replace(HELLO, "NOT_THERE_AT_ALL", "replacement"),
                    replace(HELLO, "second line", "second line, edited"),
                ),
                (
                    Outcome("read", None, False),
                    Outcome("read", None, True),
                    Outcome("edit", None, False),
                    Outcome("edit", None, True),
                ),
            ),
        ]


class OpenHandsResponses(OpenHands):
    dialect = "responses"


# ---- gptme ---------------------------------------------------------------------------------------
class Gptme(PyDriver):
    """``gptme -n --tool-format tool`` (non-interactive, native tool calls) with the ``local``
    provider: the OpenAI SDK at ``OPENAI_BASE_URL`` (Chat Completions), its default tool set. Its
    shell result is ``Ran command: `cmd``` then the output blocks, then ``Return code: N`` when N
    is not 0 (gptme/tools/shell.py ``_format_shell_output``): a success states no number, only
    the header (the core reads it as gptme's frame)."""

    name = "gptme"
    dialect = "chat"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **_venv_env(self.entry, super().env(home, base_url)),
            "OPENAI_API_KEY": "sk-interop-dummy",
            "OPENAI_BASE_URL": f"{base_url}/v1",
            "GPTME_CHECK_UPDATES": "false",
            "GPTME_TIKTOKEN_TIMEOUT": "0",  # no tokenizer download (it would wait on every count)
            "GPTME_SHELL_TIMEOUT": str(getattr(self, "_shell_timeout", 60)),
        }

    def prepare(self, scenario: Scenario) -> None:
        self._shell_timeout = 2 if scenario.id == "timeout" else 60

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [
            self.bin,
            "-n",
            "--tool-format",
            "tool",
            "--no-stream",
            "-m",
            "local/fake-model",
            "-w",
            str(ws),
            "--name",
            "interop",
            prompt,
        ]

    def scenarios(self, ws: Path | None = None) -> list[Scenario]:
        def shell(cmd: str) -> ToolCall:
            return ToolCall("shell", {"command": cmd})

        def patch(path: str, old: str, new: str) -> ToolCall:
            text = f"<<<<<<< ORIGINAL\n{old}\n=======\n{new}\n>>>>>>> UPDATED\n"
            return ToolCall("patch", {"path": path, "patch": text})

        return [
            shell_scenario(shell),
            # GPTME_SHELL_TIMEOUT=2 here: "Command timed out (after 2.0s)", no return code
            Scenario("timeout", (shell("sleep 30"),), (shell_truth(None),), 120.0),
            # Its default tool set has no read tool (read is opt-in): it reads with the shell.
            Scenario(
                "files",
                (
                    shell(f"cat {MISSING}"),
                    shell(f"cat {HELLO}"),
                    patch(HELLO, "NOT_THERE_AT_ALL", "replacement"),
                    patch(HELLO, "second line", "second line, edited"),
                ),
                (shell_truth(1), shell_truth(0), Outcome("edit", None, False), Outcome("edit", None, True)),
            ),
        ]


# ---- Kimi CLI ------------------------------------------------------------------------------------
class KimiCli(PyDriver):
    """``kimi --print --yolo`` with a provider of type ``openai_legacy`` (Chat Completions at the
    proxy) in the run's own ``config.toml``. Its shell tool is ``Shell`` (``Bash`` before 0.57); the
    result's first part is a ``<system>`` message: ``Command executed successfully.``, ``ERROR:
    Command failed with exit code: N.``, ``ERROR: Command killed by timeout (Ns)``
    (kimi_cli/tools/shell/__init__.py). 1.51.0 is its last working release: 1.52.0 (the final one)
    only prints that the package is no longer maintained."""

    name = "kimi-cli"
    dialect = "chat"

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        d = home / ".kimi"
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.toml").write_text(
            'default_model = "fake"\n'
            "[providers.fake]\n"
            'type = "openai_legacy"\n'
            f'base_url = "{base_url}/v1"\n'
            'api_key = "sk-interop-dummy"\n'
            "[models.fake]\n"
            'provider = "fake"\n'
            'model = "fake-model"\n'
            "max_context_size = 128000\n"
        )
        self._config = d / "config.toml"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {**_venv_env(self.entry, super().env(home, base_url)), "KIMI_CLI_NO_AUTO_UPDATE": "1"}

    def argv(self, prompt: str, ws: Path) -> list[str]:
        config = getattr(self, "_config", ws.parent / "home" / ".kimi" / "config.toml")
        return [self.bin, "--print", "--yolo", "-w", str(ws), "--config-file", str(config), "-p", prompt]

    def scenarios(self, ws: Path | None = None) -> list[Scenario]:
        def shell(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("Shell", {"command": cmd, **kw})

        return [
            shell_scenario(shell),
            Scenario("timeout", (shell("sleep 30", timeout=2),), (shell_truth(None),), 120.0),
            Scenario(
                "files",
                (
                    ToolCall("ReadFile", {"path": MISSING}),
                    ToolCall("ReadFile", {"path": HELLO}),
                    ToolCall("StrReplaceFile", {"path": HELLO, "edit": {"old": "NOT_THERE_AT_ALL", "new": "x"}}),
                    ToolCall("StrReplaceFile", {"path": HELLO, "edit": {"old": "second line", "new": "edited"}}),
                ),
                (
                    Outcome("read", None, False),
                    Outcome("read", None, True),
                    Outcome("edit", None, False),
                    Outcome("edit", None, True),
                ),
            ),
        ]


PY_DRIVERS: dict[str, type[Driver]] = {
    "mini-swe-agent": MiniSweAgent,
    "mini-swe-agent-responses": MiniSweAgentResponses,
    "mini-swe-agent-swebench": MiniSweAgentSwebench,
    "openai-agents": OpenAIAgents,
    "openai-agents-chat": OpenAIAgentsChat,
    "openai-agents-shell": OpenAIAgentsShellTool,
    "openai-agents-local-shell": OpenAIAgentsLocalShell,
    "openhands": OpenHands,
    "openhands-responses": OpenHandsResponses,
    "gptme": Gptme,
    "kimi-cli": KimiCli,
}


def py_driver(variant: str) -> PyDriver | None:
    """The driver of one variant (a client with one dialect/tool set), or None when the client
    is not installed."""
    cls = PY_DRIVERS[variant]
    entry = installed(cls.name)
    if not entry:
        return None
    d = cls(entry)
    d.variant = variant
    return d


def planned(variant: str) -> list[Scenario]:
    """The scenarios of a variant, known without the client (for test collection)."""
    d = PY_DRIVERS[variant]({"version": "?", "bin": "/nonexistent"})
    return d.scenarios()


# ---- the verdict ---------------------------------------------------------------------------------
def check(run: Run, cap: Captured, expect: str) -> list[str]:
    """What the bridge got wrong for this result (empty: the exact truth)."""
    text = json.dumps(cap.result)[:700]
    if cap.result is None:
        return [f"the client sent no tool result for {cap.call.name} ({cap.call_id})"]
    v = verdict_for(run, cap)
    if v.record is None:
        return [f"bypassed: no bridge record holds the request that carried the result {text}"]
    problems = []
    if v.record.get("status") == "error":
        problems.append(f"the bridge failed on the request: {v.record.get('reason')}")
    step = v.step
    kept = f"{(v.kept or {}).get('kept')}: {(v.kept or {}).get('reason')}"
    rc = (step or {}).get("runCommand")
    got = rc.get("exitCode") if rc else None
    where = f"step {json.dumps(step)[:300]}" if step else f"kept as a message ({kept})"
    truth = cap.truth
    if expect in (EXPECT_CODE, EXPECT_FAILURE, EXPECT_SILENT, EXPECT_NOT_ZERO) and step is not None and rc is None:
        problems.append(f"a shell result became a non-shell step: {where}; result {text}")
    elif expect == EXPECT_CODE:
        if step is None:
            problems.append(f"the client states exit {truth.exit_code} but the pair was {where}; result {text}")
        elif got != truth.exit_code:
            claim = (
                "lost failure"
                if got is None and truth.exit_code
                else "false claim"
                if got is not None
                else "success not stated"
            )
            problems.append(f"{claim}: exitCode {got}, truth {truth.exit_code}; result {text}")
    elif expect == EXPECT_FAILURE:
        if step is None:
            problems.append(f"a killed command (the client says so) was {where}, not a failed step; result {text}")
        elif got in (None, 0):
            problems.append(
                f"{'false claim' if got == 0 else 'lost failure'}: exitCode {got} for a killed command; result {text}"
            )
    elif expect == EXPECT_SILENT:
        if got is not None:
            problems.append(
                f"false claim: exitCode {got} from a result that states no status "
                f"(truth {truth.exit_code}); result {text}"
            )
    elif expect == EXPECT_NOT_ZERO:
        if got == 0:
            problems.append(f"false claim: exit 0 for a killed command; result {text}")
    elif expect == EXPECT_RUNNING:
        if step is not None:
            problems.append(
                f"false claim: a command the client says is still running became a step: {where}; result {text}"
            )
    elif expect == EXPECT_NO_STEP:
        if step is not None:
            problems.append(f"false claim: a failed {truth.kind} became a step: {where}; result {text}")
    elif expect == EXPECT_FILE_OK and step is not None:
        kinds = {"read": ("viewFile",), "edit": ("proposeCode", "writeToFile")}[truth.kind]
        if not any(k in step for k in kinds):
            problems.append(f"a successful {truth.kind} became the wrong step: {where}")
    return problems


# ---- what the test modules share -----------------------------------------------------------------
def cases(client: str) -> list[Any]:
    """One pytest param per scripted call of every variant and scenario of ``client``."""
    import pytest

    out = []
    for variant in CLIENT_VARIANTS[client]:
        for scenario in planned(variant):
            for i, call in enumerate(scenario.calls):
                label = call.raw_input.splitlines()[1] if call.raw_input else json.dumps(call.arguments)
                out.append(pytest.param(variant, scenario.id, i, id=f"{variant}-{scenario.id}-{i:02d}-{label[:60]}"))
    return out


def scenario_params(client: str) -> list[Any]:
    import pytest

    return [pytest.param(v, s.id, id=f"{v}-{s.id}") for v in CLIENT_VARIANTS[client] for s in planned(v)]


class RunCache:
    """One real run per (variant, scenario), shared by the tests of its calls."""

    def __init__(self, tmp_root: Path) -> None:
        self.tmp_root = tmp_root
        self.runs: dict[tuple[str, str], tuple[PyDriver, Scenario, Run]] = {}

    def run(self, variant: str, sid: str) -> tuple[PyDriver, Scenario, Run]:
        key = (variant, sid)
        if key not in self.runs:
            d = py_driver(variant)
            assert d is not None, skip_reason(PY_DRIVERS[variant].name)
            scenario = next(s for s in d.scenarios() if s.id == sid)
            tmp = Path(tempfile.mkdtemp(prefix=f"{variant}-{sid}-", dir=self.tmp_root))
            self.runs[key] = (d, scenario, run_scenario(d, scenario, tmp))
        return self.runs[key]

    def case(self, variant: str, sid: str, index: int) -> tuple[Run, Captured, str]:
        d, scenario, run = self.run(variant, sid)
        assert index < len(run.captured), f"the fake model made {len(run.captured)} calls\n{run.describe()}"
        cap = run.captured[index]
        return run, cap, d.expectation(scenario, cap.truth)


# ---- the corpus ----------------------------------------------------------------------------------
CORPUS = HERE.parent / "fixtures" / "corpus"
CLIENT_VARIANTS: dict[str, list[str]] = {}
for _v, _c in PY_DRIVERS.items():
    CLIENT_VARIANTS.setdefault(_c.name, []).append(_v)


def run_variant(variant: str, scenario: Scenario, tmp: Path) -> Run:
    d = py_driver(variant)
    assert d is not None, f"{variant} is not installed"
    return run_scenario(d, scenario, tmp)


def capture(client: str, tmp_root: Path, log: Any = print) -> dict[str, Any]:
    """Run every variant and scenario of one client; the corpus document for tests/fixtures/corpus/."""
    doc: dict[str, Any] = {
        "client": client,
        "version": None,
        "source": "tests/interop/pyclients.py",
        "tools": {},
        "entries": [],
    }
    for variant in CLIENT_VARIANTS[client]:
        d = py_driver(variant)
        if d is None:
            raise SystemExit(skip_reason(client))
        doc["version"] = d.version
        for scenario in d.scenarios():
            t0 = time.monotonic()
            run = run_scenario(d, scenario, Path(tempfile.mkdtemp(prefix=f"{variant}-{scenario.id}-", dir=tmp_root)))
            got = sum(c.result is not None for c in run.captured)
            log(f"{variant} {scenario.id}: {got}/{len(scenario.calls)} results in {time.monotonic() - t0:.1f} s")
            key = f"{variant} ({d.dialect})"
            if run.tools and key not in doc["tools"]:
                doc["tools"][key] = tool_schema_summary(run.tools)
            for cap in run.captured:
                if cap.result is None:
                    continue
                entry = corpus_entry(run, cap)
                entry["variant"] = variant
                entry["client_states_status"] = d.states_code
                entry["expect"] = d.expectation(scenario, cap.truth)
                doc["entries"].append(entry)
    return doc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="capture the Python clients' real tool results into tests/fixtures/corpus/")
    p.add_argument("--client", action="append", choices=sorted(CLIENT_VARIANTS))
    p.add_argument("--out", type=Path, default=CORPUS)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pyclients-capture-") as tmp:
        for client in args.client or sorted(CLIENT_VARIANTS):
            doc = capture(client, Path(tmp))
            path = args.out / f"{client}.json"
            path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
            print(f"{path}: {len(doc['entries'])} results from {client} {doc['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
