"""What the demo sends: the bundled session, the real gateway's two turns and the reference probe."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "sessions"  # the bundled sessions and the gateway's captures
SESSION = FIXTURES / "chat_session.json"
# The real gateway's (dwgx/WindsurfAPI 3.9.27) SendUserCascadeMessage bodies and the agent's chat
# requests that produced them; Metadata.api_key is a planted fake key.
GATEWAY_TURNS = (
    (FIXTURES / "gateway-chat-turn1.json", FIXTURES / "gateway-grpc-turn1.bin"),
    (FIXTURES / "gateway-chat-turn2.json", FIXTURES / "gateway-grpc-turn2-resumed.bin"),
)
SEND = "/exa.language_server_pb.LanguageServerService/SendUserCascadeMessage"
CLAUDE_CODE_UA = "claude-cli/2.1.332 (external, cli)"  # the agent behind the gateway: its own frames count
# The reference fix's probe, exactly as it states it: a failed Bash over Chat Completions, no client named.
PROBE_COMMAND = "ls /nope"
PROBE_RESULT = "Exit code: 2\nOutput:\nls: cannot access /nope"
RUN_HEADER = "x-bridge-run"  # tags each run's requests, so its records and the planner's copies are found
