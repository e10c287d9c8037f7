"""Entry script: ``mitmdump -s addons/bridge.py``.

Loads the bridge from this checkout, or from the installed ``native_bridge``
package when this file is used on its own.
"""

import os
import sys

try:
    from native_bridge.shell import view
    from native_bridge.shell.chat_addon import NativeBridge
    from native_bridge.shell.commands import BridgeCommands
except ImportError:  # a checkout whose package is not importable yet
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from native_bridge.shell import view
    from native_bridge.shell.chat_addon import NativeBridge
    from native_bridge.shell.commands import BridgeCommands

view.register()  # the "Bridge steps" and "Bridge diff" content views
addons = [NativeBridge(), BridgeCommands()]
