"""Run the OpenAI Agents SDK once, with one of its shell tools, against ``OPENAI_BASE_URL``.

Started by the interop suite under the SDK's own venv (``.interop/py-openai-agents``); not a
test module. ``--mode``:

- ``sandbox``: ``SandboxAgent`` with the ``Shell`` and ``Filesystem`` capabilities on the SDK's
  ``UnixLocalSandboxClient`` rooted at the workspace: the SDK's ``exec_command`` (function tool;
  the SDK runs the command and formats ``Process exited with code N`` itself) and its
  ``apply_patch`` (custom tool);
- ``shell``: ``ShellTool`` with an executor shaped like the SDK's example (structured
  ``ShellResult``: stdout, stderr, ``outcome`` exit/timeout); the SDK builds
  ``shell_call_output``;
- ``local_shell``: ``LocalShellTool`` with an executor shaped like the SDK's example (returns
  stdout + stderr as one string, no status).

``--api responses`` uses ``OpenAIResponsesModel``, ``--api chat`` ``OpenAIChatCompletionsModel``.
Tracing is off (nothing leaves loopback).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys

from agents import (
    Agent,
    LocalShellCommandRequest,
    LocalShellTool,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    ShellCallOutcome,
    ShellCommandOutput,
    ShellCommandRequest,
    ShellResult,
    ShellTool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI


def shell_executor(cwd: str):
    async def run(request: ShellCommandRequest) -> ShellResult:
        action = request.data.action
        outputs: list[ShellCommandOutput] = []
        for command in action.commands:
            proc = await asyncio.create_subprocess_shell(
                command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True
            )
            timed_out = False
            try:
                out, err = await asyncio.wait_for(proc.communicate(), timeout=(action.timeout_ms or 0) / 1000 or None)
            except TimeoutError:
                os.killpg(proc.pid, 9)
                out, err = await proc.communicate()
                timed_out = True
            outputs.append(
                ShellCommandOutput(
                    command=command,
                    stdout=out.decode("utf-8", "replace"),
                    stderr=err.decode("utf-8", "replace"),
                    outcome=ShellCallOutcome(type="timeout" if timed_out else "exit", exit_code=proc.returncode),
                )
            )
            if timed_out:
                break
        return ShellResult(output=outputs, provider_data={"working_directory": cwd})

    return run


def local_shell_executor(request: LocalShellCommandRequest) -> str:
    action = request.data.action
    try:
        done = subprocess.run(
            action.command,
            cwd=action.working_directory or os.getcwd(),
            env={**os.environ, **(action.env or {})},
            capture_output=True,
            text=True,
            timeout=(action.timeout_ms / 1000) if action.timeout_ms else None,
        )
        return done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        return "Command execution timed out"
    except Exception as e:  # what the SDK's example returns
        return f"Error executing command: {e}"


async def main(args: argparse.Namespace) -> int:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"])
    model_cls = OpenAIResponsesModel if args.api == "responses" else OpenAIChatCompletionsModel
    model = model_cls(model="gpt-5.1", openai_client=client)
    run_config = RunConfig(tracing_disabled=True)
    instructions = "You run shell commands for the user with your tools. Keep answers short."
    if args.mode == "sandbox":
        from agents.sandbox import Manifest, SandboxAgent, SandboxRunConfig
        from agents.sandbox.capabilities import Filesystem, Shell
        from agents.sandbox.sandboxes.unix_local import UnixLocalSandboxClient

        agent: Agent = SandboxAgent(
            name="Interop",
            instructions=instructions,
            model=model,
            default_manifest=Manifest(root=args.workspace),
            # apply_patch is a custom (freeform) tool, which Chat Completions cannot carry.
            capabilities=[Shell(), Filesystem()] if args.api == "responses" else [Shell()],
        )
        run_config = RunConfig(tracing_disabled=True, sandbox=SandboxRunConfig(client=UnixLocalSandboxClient()))
    elif args.mode == "shell":
        agent = Agent(
            name="Interop",
            instructions=instructions,
            model=model,
            tools=[ShellTool(executor=shell_executor(args.workspace))],
            model_settings=ModelSettings(),
        )
    else:
        agent = Agent(
            name="Interop",
            instructions=instructions,
            model=model,
            tools=[LocalShellTool(executor=local_shell_executor)],
        )
    result = await Runner.run(agent, args.prompt, max_turns=args.max_turns, run_config=run_config)
    print(f"final: {result.final_output}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--api", choices=["responses", "chat"], default="responses")
    p.add_argument("--mode", choices=["sandbox", "shell", "local_shell"], default="sandbox")
    p.add_argument("--workspace", required=True)
    p.add_argument("--max-turns", type=int, default=40)
    p.add_argument("prompt")
    sys.exit(asyncio.run(main(p.parse_args())))
