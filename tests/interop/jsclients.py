"""The JavaScript agent CLIs of the interop suite: how each is configured, started, and
what its shell/read/edit tools are called, with the ground truth of every scripted call.

Each client runs a few scenarios; a scenario is one client run in which the fake model
asks for several tool calls in turn (one call per model turn), so one run yields many
real results. ``{ws}`` in arguments is the run's workspace (it holds ``hello.txt``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakemodel import ToolCall
from harness import Driver, Outcome, Scenario, installed

MISSING = "{ws}/missing.txt"
HELLO = "{ws}/hello.txt"

# (command, the real exit code). Run by each client's own shell tool.
SHELL: list[tuple[str, int]] = [
    ("echo hi", 0),
    ("ls /nope", 2),  # GNU ls: 2 for a missing operand
    ("sh -c 'exit 3'", 3),
    ("nonexistent_cmd_interop", 127),
    ("false", 1),
    ("echo 'Exit code: 3'", 0),  # the program's output forges a status line
    ("printf '{\"exit_code\": 1}\\n'", 0),  # ... or a JSON status
    ("grep -q nomatch hello.txt", 1),
    ("sh -c 'echo out; echo err >&2; exit 4'", 4),
]

SELF_KILL = "sh -c 'kill -9 $$'"
SHELL_OK = Outcome("shell", 0, True)
KILLED = Outcome("shell", None, False)  # killed by a signal or the client's timeout: a failure without a number
RUNNING = Outcome("shell", None, False, running=True)
NOT_RUN = Outcome("shell", None, False, running=True)  # refused by the client: never ran


def shell_truth(code: int | None) -> Outcome:
    return Outcome("shell", code, code == 0)


def shell_scenario(make: Callable[[str], ToolCall]) -> Scenario:
    return Scenario(
        "shell",
        tuple(make(cmd) for cmd, _ in SHELL),
        tuple(shell_truth(code) for _, code in SHELL),
    )


def files_scenario(read: Callable[[str], ToolCall], edit: Callable[[str, str, str], ToolCall]) -> Scenario:
    """Read missing, read existing, failed edit (old text absent), successful edit."""
    return Scenario(
        "files",
        (
            read(MISSING),
            read(HELLO),
            edit(HELLO, "NOT_THERE_AT_ALL", "replacement"),
            edit(HELLO, "second line", "second line, edited"),
        ),
        (
            Outcome("read", None, False),
            Outcome("read", None, True),
            Outcome("edit", None, False),
            Outcome("edit", None, True),
        ),
    )


def timeout_scenario(*calls: ToolCall) -> Scenario:
    """The client's timeout kills the first call; the rest kill themselves (SIGKILL)."""
    return Scenario("timeout", calls, tuple(KILLED for _ in calls))


# ---- Claude Code ----------------------------------------------------------------------------------
class ClaudeCode(Driver):
    name = "claude-code"
    dialect = "anthropic"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **super().env(home, base_url),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-interop-dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
            "IS_SANDBOX": "1",  # root may use --dangerously-skip-permissions inside a sandbox
            "BASH_DEFAULT_TIMEOUT_MS": "30000",
        }

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        # Skip the first-run onboarding and trust dialog.
        (home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "projects": {str(ws): {"hasTrustDialogAccepted": True, "allowedTools": []}},
                }
            )
        )

    def states_status(self, result: Any, truth: Outcome) -> bool:
        # Claude Code states a status only on failure (is_error, first line "Exit code N");
        # a success, and grep/test exiting 1, come back as plain output.
        return isinstance(result, dict) and result.get("is_error") is True

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [
            self.bin,
            "-p",
            prompt,
            "--dangerously-skip-permissions",
            "--model",
            "claude-sonnet-4-5",
            "--max-turns",
            "30",
        ]

    def scenarios(self) -> list[Scenario]:
        def bash(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("Bash", {"command": cmd, "description": "run it", **kw})

        return [
            shell_scenario(bash),
            timeout_scenario(bash("sleep 20", timeout=1000), bash(SELF_KILL)),
            files_scenario(
                lambda p: ToolCall("Read", {"file_path": p}),
                lambda p, old, new: ToolCall("Edit", {"file_path": p, "old_string": old, "new_string": new}),
            ),
        ]


DRIVERS: dict[str, type[Driver]] = {"claude-code": ClaudeCode}


def driver(name: str) -> Driver | None:
    cls = DRIVERS[name]
    entry = installed(cls.name)
    return cls(entry) if entry else None


# ---- Codex CLI --------------------------------------------------------------------------------------
class Codex(Driver):
    """``codex exec`` with a custom model provider (Responses over HTTP+SSE)."""

    name = "codex"
    dialect = "responses"
    transport = "http"
    model = "gpt-5.5"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **super().env(home, base_url),
            "CODEX_HOME": str(home / ".codex"),
            "FAKE_API_KEY": "sk-interop-dummy",
            "OPENAI_API_KEY": "sk-interop-dummy",
            "CODEX_API_KEY": "sk-interop-dummy",
            "RUST_LOG": "error",
        }

    def provider_toml(self, base_url: str) -> str:
        return (
            'model_provider = "fake"\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{base_url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "FAKE_API_KEY"\n'
            "supports_websockets = false\n"
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
        )

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        d = home / ".codex"
        d.mkdir(parents=True, exist_ok=True)
        top = (
            f'model = "{self.model}"\n'
            'approval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\n'
            "check_for_update_on_startup = false\n"
            "[analytics]\nenabled = false\n"
            "[feedback]\nenabled = false\n"
            '[otel]\nexporter = "none"\n'
        )
        # The provider keys must come before any table: put them first.
        (d / "config.toml").write_text(
            self.provider_toml(base_url).split("[model_providers", 1)[0]
            + top
            + "[model_providers"
            + self.provider_toml(base_url).split("[model_providers", 1)[1]
            if "[model_providers" in self.provider_toml(base_url)
            else self.provider_toml(base_url) + top
        )

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [
            self.bin,
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-C",
            str(ws),
            prompt,
        ]

    def scenarios(self) -> list[Scenario]:
        def ex(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("exec_command", {"cmd": cmd, **kw})

        def patch(path: str, old: str, new: str) -> ToolCall:
            text = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
            return ToolCall("apply_patch", raw_input=text)

        return [
            shell_scenario(ex),
            # Codex has no read tool: it reads with the shell.
            Scenario(
                "files",
                (
                    ex(f"cat {MISSING}"),
                    ex(f"cat {HELLO}"),
                    patch(HELLO, "NOT_THERE_AT_ALL", "x"),
                    patch(HELLO, "second line", "second line, edited"),
                ),
                (shell_truth(1), shell_truth(0), Outcome("edit", None, False), Outcome("edit", None, True)),
            ),
            Scenario("timeout", (ex(SELF_KILL), ex("sleep 20", yield_time_ms=250)), (KILLED, RUNNING)),
        ]


class CodexWebSocket(Codex):
    """``codex exec`` with the built-in OpenAI provider: Responses over a WebSocket."""

    name = "codex"
    transport = "ws"

    def provider_toml(self, base_url: str) -> str:
        return f'model_provider = "openai"\nopenai_base_url = "{base_url}/v1"\n'

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {**super().env(home, base_url), "OPENAI_BASE_URL": f"{base_url}/v1"}


DRIVERS["codex"] = Codex
DRIVERS["codex-ws"] = CodexWebSocket


# ---- Gemini CLI (Gemini API) and Qwen Code (its fork, Chat Completions) --------------------------------
class GeminiCli(Driver):
    name = "gemini-cli"
    dialect = "gemini"
    model = "gemini-2.5-flash"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **super().env(home, base_url),
            "GEMINI_API_KEY": "interop-dummy-key",
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "GEMINI_TELEMETRY_ENABLED": "false",
            "GEMINI_SANDBOX": "false",
        }

    def settings(self) -> dict[str, Any]:
        return {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "enableAutoUpdate": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "ide": {"enabled": False},
            "tools": {"sandbox": False},
            "model": {"name": self.model},
        }

    settings_dir = ".gemini"

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        d = home / self.settings_dir
        d.mkdir(parents=True, exist_ok=True)
        (d / "settings.json").write_text(json.dumps(self.settings()))

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [self.bin, "-p", prompt, "--yolo", "-m", self.model]

    def shell(self, cmd: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": cmd, "description": "run it"})

    def read(self, path: str) -> ToolCall:
        return ToolCall("read_file", {"file_path": path})

    def edit(self, path: str, old: str, new: str) -> ToolCall:
        return ToolCall("replace", {"file_path": path, "old_string": old, "new_string": new, "instruction": "edit it"})

    def scenarios(self) -> list[Scenario]:
        return [
            shell_scenario(self.shell),
            Scenario("timeout", (self.shell(SELF_KILL),), (KILLED,)),
            files_scenario(self.read, self.edit),
        ]


class QwenCode(GeminiCli):
    name = "qwen-code"
    dialect = "chat"
    model = "qwen3-coder-plus"
    settings_dir = ".qwen"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **Driver.env(self, home, base_url),
            "OPENAI_API_KEY": "sk-interop-dummy",
            "OPENAI_BASE_URL": f"{base_url}/v1",
            "OPENAI_MODEL": self.model,
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        }

    def settings(self) -> dict[str, Any]:
        s = super().settings()
        s["security"]["auth"] = {"selectedType": "openai"}
        return s

    def edit(self, path: str, old: str, new: str) -> ToolCall:
        return ToolCall("edit", {"file_path": path, "old_string": old, "new_string": new})

    def states_status(self, result: Any, truth: Outcome) -> bool:
        # Over Chat Completions a successful read_file is the file's bare content: no words of
        # Qwen Code say it succeeded (a file may itself begin like an error), so it may stay a message.
        if truth.kind == "read" and truth.ok:
            return False
        return super().states_status(result, truth)

    def scenarios(self) -> list[Scenario]:
        def timed(cmd: str) -> ToolCall:
            return ToolCall("run_shell_command", {"command": cmd, "description": "run it", "timeout": 1000})

        return [
            shell_scenario(self.shell),
            Scenario(
                "timeout",
                # qwen refuses a bare sleep (never runs it) unless a comment says it is intended
                (timed("sleep 20 # intentional-sleep: interop timeout test"), self.shell(SELF_KILL), timed("sleep 20")),
                (KILLED, KILLED, NOT_RUN),
            ),
            files_scenario(self.read, self.edit),
        ]


DRIVERS["gemini-cli"] = GeminiCli
DRIVERS["qwen-code"] = QwenCode


# ---- opencode and Kilo Code's CLI (an opencode fork) ---------------------------------------------------
class Opencode(Driver):
    name = "opencode"
    dialect = "chat"
    config_name = "opencode"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        env = {**super().env(home, base_url), "FAKE_API_KEY": "sk-interop-dummy"}
        for prefix in ("OPENCODE", "KILO"):
            env |= {
                f"{prefix}_DISABLE_AUTOUPDATE": "1",
                f"{prefix}_DISABLE_MODELS_FETCH": "1",
                f"{prefix}_DISABLE_LSP_DOWNLOAD": "1",
                f"{prefix}_DISABLE_DEFAULT_PLUGINS": "1",
                f"{prefix}_DISABLE_SHARE": "1",
                f"{prefix}_DISABLE_TELEMETRY": "1",
                f"{prefix}_TELEMETRY_DISABLED": "1",
                f"{prefix}_DISABLE_CLAUDE_CODE": "1",
            }
        return env

    def config(self, base_url: str) -> dict[str, Any]:
        return {
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-interop-dummy"},
                    "models": {
                        "fake-model": {
                            "name": "Fake model",
                            "tool_call": True,
                            "limit": {"context": 200000, "output": 8000},
                        }
                    },
                }
            },
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": False,
            "share": "disabled",
            "permission": {
                "edit": "allow",
                "bash": "allow",
                "webfetch": "allow",
                "external_directory": "allow",
                "read": "allow",
            },
        }

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        d = home / ".config" / self.config_name
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{self.config_name}.json").write_text(json.dumps(self.config(base_url)))

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [self.bin, "run", "--model", "fake/fake-model", prompt]

    bash_extra: dict[str, Any] = {}  # noqa: RUF012

    def states_status(self, result: Any, truth: Outcome) -> bool:
        # The exit code stays client-side; only the timeout note says a command failed.
        return "<shell_metadata>" in json.dumps(result)

    def scenarios(self) -> list[Scenario]:
        def bash(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("bash", {"command": cmd, **self.bash_extra, **kw})

        return [
            shell_scenario(bash),
            # No self-kill here: after a SIGKILLed child, opencode 1.18 never returned the result (hung to the timeout).
            Scenario("timeout", (bash("sleep 20", timeout=1000),), (KILLED,)),
            files_scenario(
                lambda p: ToolCall("read", {"filePath": p}),
                lambda p, old, new: ToolCall("edit", {"filePath": p, "oldString": old, "newString": new}),
            ),
        ]


class Kilo(Opencode):
    name = "kilo"
    config_name = "kilo"
    bash_extra = {"description": "run it"}  # noqa: RUF012

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        super().configure(home, ws, base_url)
        d = home / ".config" / "kilo"
        (d / "opencode.json").write_text(json.dumps(self.config(base_url)))

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [self.bin, "run", "--auto", "--model", "fake/fake-model", prompt]


DRIVERS["opencode"] = Opencode
DRIVERS["kilo"] = Kilo


# ---- Continue's CLI (cn) ------------------------------------------------------------------------------
class ContinueCli(Driver):
    """``cn -p --auto`` with a local config.yaml: one ``openai`` model at the proxy (Chat Completions)."""

    name = "continue-cli"
    dialect = "chat"
    config_path = "config.yaml"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **super().env(home, base_url),
            "CONTINUE_GLOBAL_DIR": str(home / ".continue"),
            "CONTINUE_CLI_DISABLE_TELEMETRY": "1",
            "CONTINUE_TELEMETRY_ENABLED": "0",
            "OPENAI_API_KEY": "sk-interop-dummy",
        }

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        d = home / ".continue"
        d.mkdir(parents=True, exist_ok=True)
        self.config_path = str(d / "config.yaml")  # argv() names it: the run's own config
        (d / "config.yaml").write_text(
            "name: interop\nversion: 0.0.1\nschema: v1\nmodels:\n"
            "  - name: fake\n    provider: openai\n    model: gpt-4o\n"
            f"    apiBase: {base_url}/v1\n    apiKey: sk-interop-dummy\n"
            "    roles: [chat]\n    capabilities: [tool_use]\n"
        )

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [self.bin, "-p", prompt, "--auto", "--config", self.config_path]

    def states_status(self, result: Any, truth: Outcome) -> bool:
        # A failure with stderr reads "Error executing tool Bash: Error (exit code N): <stderr>"; a
        # failure without stderr and every success are the bare output (absent is the truth there).
        # The core identifies the CLI by its tool set (its User-Agent is the bundled OpenAI SDK's).
        return "Error (exit code " in json.dumps(result)

    def scenarios(self) -> list[Scenario]:
        def bash(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("Bash", {"command": cmd, **kw})

        return [
            shell_scenario(bash),
            files_scenario(
                lambda p: ToolCall("Read", {"filepath": p}),
                # Edit is not offered to this model; MultiEdit is (one edit here)
                lambda p, old, new: ToolCall(
                    "MultiEdit", {"file_path": p, "edits": [{"old_string": old, "new_string": new}]}
                ),
            ),
        ]


DRIVERS["continue-cli"] = ContinueCli


# ---- what the test modules share ----------------------------------------------------------------------
def _blank(key: str) -> Driver:
    """A driver for listing scenarios when the client is not installed."""
    cls = DRIVERS[key]
    return cls(installed(cls.name) or {"version": "?", "bin": "/nonexistent"})


def cases(key: str) -> list[Any]:
    """pytest params (scenario id, call index) of every scripted call of a client."""
    import pytest

    out = []
    for sc in _blank(key).scenarios():
        for i, call in enumerate(sc.calls):
            label = (
                call.arguments.get("command")
                or call.arguments.get("cmd")
                or call.raw_input
                or json.dumps(call.arguments)
            )
            out.append(pytest.param(sc.id, i, id=f"{sc.id}-{i}-{call.name}-{str(label)[:40]}"))
    return out


def scenario_ids(key: str) -> list[str]:
    return [sc.id for sc in _blank(key).scenarios()]


class JsRunCache:
    """One real run per (client, scenario) per test module; the tests read its results."""

    def __init__(self, key: str, tmp: Path) -> None:
        self.key = key
        self.tmp = tmp
        self.driver = DRIVERS[key](installed(DRIVERS[key].name))  # type: ignore[arg-type]
        self.runs: dict[str, Any] = {}

    def run(self, sid: str) -> Any:
        from harness import run_scenario

        if sid not in self.runs:
            sc = next(s for s in self.driver.scenarios() if s.id == sid)
            self.runs[sid] = run_scenario(self.driver, sc, self.tmp / sid)
        return self.runs[sid]

    def check(self, sid: str, index: int) -> list[str]:
        from harness import truth_failures

        run = self.run(sid)
        if index >= len(run.captured):
            return [f"the client never got to call #{index} (it made {len(run.captured)} calls)\n{run.describe()}"]
        cap = run.captured[index]
        return truth_failures(run, cap, self.driver.states_status(cap.result, cap.truth))


# ---- Cline's CLI (cline, the SDK-based CLI since 3.0) -----------------------------------------------------
class ClineCli(Driver):
    """``cline --json <prompt>`` (act mode, auto-approve) with the ``openai-compatible`` provider that
    ``cline auth`` writes into the run's own config directory (Chat Completions)."""

    name = "cline"
    dialect = "chat"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {**super().env(home, base_url), "CLINE_TELEMETRY_DISABLED": "1", "CLINE_DISABLE_AUTO_UPDATE": "1"}

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        import subprocess

        out = subprocess.run(
            [
                self.bin,
                "auth",
                "-p",
                "openai-compatible",
                "-k",
                "sk-interop-dummy",
                "-m",
                "fake-model",
                "-b",
                f"{base_url}/v1",
            ],
            cwd=ws,
            env=self.env(home, base_url),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, f"cline auth failed: {out.stdout[-1000:]} {out.stderr[-1000:]}"

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [self.bin, "--json", "-c", str(ws), prompt]

    def states_status(self, result: Any, truth: Outcome) -> bool:
        # Every run_commands result states its status (``"success"``, ``[Command exited with code N]``).
        # read_files and editor map to no step kind in the core's tool table (3.0.65): their pairs stay
        # messages, a successful read too (that gap is reported, not hidden: a failed read or edit that
        # became a step would still fail here).
        return not (truth.kind == "read" and truth.ok)

    def scenarios(self) -> list[Scenario]:
        def run(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("run_commands", {"commands": [cmd], **kw})

        return [
            shell_scenario(run),
            Scenario("timeout", (run(SELF_KILL),), (KILLED,)),
            files_scenario(
                lambda p: ToolCall("read_files", {"files": [{"path": p}]}),
                lambda p, old, new: ToolCall("editor", {"path": p, "old_text": old, "new_text": new}),
            ),
        ]


DRIVERS["cline"] = ClineCli


# ---- pi (@mariozechner/pi-coding-agent) ------------------------------------------------------------------
class Pi(Driver):
    """``pi -p --no-session`` with a provider of its own in ``$PI_CODING_AGENT_DIR/models.json``
    (``openai-completions``: Chat Completions at the proxy). Its tools: read, bash, edit, write. A
    successful command is its bare output; a failed one throws ``<output>\\n\\nCommand exited with
    code N`` (or ``Command timed out after N seconds``, ``Command aborted``), which reaches the model
    as the tool result's text (dist/core/tools/bash.js)."""

    name = "pi"
    dialect = "chat"

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        return {
            **super().env(home, base_url),
            "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent"),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        d = home / ".pi" / "agent"
        d.mkdir(parents=True, exist_ok=True)
        provider = {
            "baseUrl": f"{base_url}/v1",
            "api": "openai-completions",
            "apiKey": "sk-interop-dummy",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "fake-model"}],
        }
        (d / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))

    def argv(self, prompt: str, ws: Path) -> list[str]:
        return [self.bin, "-p", "--no-session", "--offline", "--model", "fake/fake-model", prompt]

    def states_status(self, result: Any, truth: Outcome) -> bool:
        # A failure states its code or its kill; a success (and its read) is the bare output.
        text = json.dumps(result)
        return "Command exited with code " in text or "Command timed out after " in text

    def scenarios(self) -> list[Scenario]:
        def bash(cmd: str, **kw: Any) -> ToolCall:
            return ToolCall("bash", {"command": cmd, **kw})

        return [
            shell_scenario(bash),
            Scenario("timeout", (bash("sleep 20", timeout=1), bash(SELF_KILL)), (KILLED, KILLED)),
            files_scenario(
                lambda p: ToolCall("read", {"path": p}),
                lambda p, old, new: ToolCall("edit", {"path": p, "oldText": old, "newText": new}),
            ),
        ]


DRIVERS["pi"] = Pi
