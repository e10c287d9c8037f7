"""Run the OpenHands SDK once, as its getting-started example does, against ``LLM_BASE_URL``.

Started by the interop suite under the SDK's own venv (``.interop/py-openhands``); not a test
module. An ``Agent`` with the SDK's ``TerminalTool`` and ``FileEditorTool`` (openhands-tools),
an ``LLM`` through litellm (``--api chat``: Chat Completions; ``--api responses``: the
Responses API the SDK uses for GPT-5-class models), a local ``Conversation`` in the workspace.
"""

from __future__ import annotations

import argparse
import os
import sys

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool
from pydantic import SecretStr


def main(args: argparse.Namespace) -> int:
    llm = LLM(
        model="openai/gpt-5.1" if args.api == "responses" else "openai/gpt-4.1",
        api_key=SecretStr(os.environ["OPENAI_API_KEY"]),
        base_url=os.environ["LLM_BASE_URL"],
        api_mode=args.api,
        usage_id="agent",
        num_retries=0,
    )
    agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
    conversation = Conversation(
        agent=agent,
        workspace=args.workspace,
        persistence_dir=os.path.join(os.environ.get("HOME", "/tmp"), "oh-conversations"),
        max_iteration_per_run=args.max_iterations,
        stuck_detection=False,
        visualizer=None,
    )
    try:
        conversation.send_message(args.prompt)
        conversation.run()
    finally:
        conversation.close()
    print(f"final status: {conversation.state.execution_status}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--api", choices=["chat", "responses"], default="chat")
    p.add_argument("--workspace", required=True)
    p.add_argument("--max-iterations", type=int, default=40)
    p.add_argument("prompt")
    sys.exit(main(p.parse_args()))
