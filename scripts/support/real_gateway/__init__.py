"""The parts of scripts/real_gateway.py (both hops in front of the real gateway, offline): its
settings and scenarios (config.py), the state directory (state.py), what runs inside the
namespaces (namespace.py) and the report read back from the run (report.py). The tests take
the scenarios, keys and checks from here."""

from __future__ import annotations

from .config import API_KEY, CODEIUM_API_KEY, EPHEMERAL_PORTS, SCENARIOS, Scenario, gateway_dir, why_not
from .namespace import post

__all__ = ["API_KEY", "CODEIUM_API_KEY", "EPHEMERAL_PORTS", "SCENARIOS", "Scenario", "gateway_dir", "post", "why_not"]
