"""Entry script: ``mitmdump -s addons/bridge.py``.

Loads the bridge from this checkout, or from the installed ``native_bridge``
package when this file is used on its own. Both hops share one state (ledger and
observations): the chat hop observes or rewrites agent requests, the planner hop
corrects the gateway's gRPC requests on the listeners named by ``bridge_planner``.
"""

import os
import sys

try:
    import native_bridge.chat_hop  # noqa: F401
except ImportError:  # a checkout whose package is not importable yet
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from native_bridge.chat_hop.addon import ChatHop
from native_bridge.inspect import view
from native_bridge.inspect.commands import BridgeCommands
from native_bridge.planner_hop.addon import PlannerHop
from native_bridge.runtime.h2c import H2CListener
from native_bridge.runtime.state import BridgeState

view.register()  # the "Bridge steps" and "Bridge diff" content views
state, h2c = BridgeState(), H2CListener()
chat = ChatHop(state, h2c)
addons = [state, h2c, chat, PlannerHop(state, h2c), BridgeCommands()]
