"""mitmweb / mitmproxy content views for bridged requests: thin wrappers over explain.py.

"Bridge steps" (picked automatically for a rewritten request): the verdict, every
step (kind, status, exit code, command / file / pattern, output excerpt) and where
every call and result of the original went. "Bridge diff": the message history
before and after, item by item. Anything the bridge did not rewrite gets a negative
priority, so mitmproxy's own views keep it.

The original body comes from the flow's backup (``flow.backup()`` before the
rewrite stores the whole pre-rewrite flow state in ``flow._backup``; it survives
``-w`` files and is what mitmweb's "revert" restores).

The same views show a WebSocket client frame the bridge saw (Responses over
WebSocket, chat_hop/websocket.py; shown by websocket_view.py): mitmweb's Messages tab
renders each message with its own view, so a bridged ``response.create`` frame gets
"Bridge steps", its original content from the flow's ``bridge_ws`` metadata; server
frames keep mitmproxy's views.
"""

from __future__ import annotations

import logging

from mitmproxy import contentviews, ctx, http
from mitmproxy.contentviews import Contentview, Metadata

from ..core.pipeline import STEPPED, Config, rewrite
from ..records.planner import is_planner_flow
from ..runtime import META
from . import explain, planner_view, websocket_view

logger = logging.getLogger(__name__)

PRIORITY = 10.0  # above every built-in view (JSON is 1) for a rewritten request


def original_body(flow: http.HTTPFlow) -> bytes | None:
    """The request body as the client sent it, decoded, from the flow's backup."""
    state = getattr(flow, "_backup", None)
    if not isinstance(state, dict) or not isinstance(state.get("request"), dict):
        return None
    try:
        return http.Request.from_state(dict(state["request"])).get_content(strict=False)
    except Exception:  # a damaged backup must not break the view
        logger.debug("bridge view: cannot read the backup of flow %s", flow.id, exc_info=True)
        return None


def bridge_config() -> Config:
    """The running bridge's config (kinds, tool map, dialect), so re-derivation matches the rewrite."""
    try:
        addon = ctx.master.addons.get("chathop")
    except AttributeError:  # no master (a script importing this module)
        addon = None
    config = getattr(addon, "config", None)
    return config if isinstance(config, Config) else Config()


def explain_flow(flow: http.HTTPFlow) -> explain.Explained:
    """What the bridge did to this flow's request; ValueError unless the bridge rewrote it."""
    meta = flow.metadata.get(META)
    status = meta.get("status") if isinstance(meta, dict) else None
    if status not in STEPPED:
        raise ValueError("the bridge did not rewrite or observe this request")
    req, config = flow.request, bridge_config()
    body = req.get_content(strict=False)
    ua = req.headers.get("user-agent")  # as the addon passed it to the core: it names the client
    if status == "rewritten":
        return explain.explain_bodies(original_body(flow), body, req.path, config, ua)
    # Observe mode sent the body as it came: show what its history states, as a rewrite would.
    again = rewrite(body, config, req.path, client_hint=ua).body if body else None
    ex = explain.explain_bodies(body, again, req.path, config, ua)
    ex.notes.insert(
        0,
        "observe mode: the request went upstream as the client sent it; these steps are what its "
        "history states (shared with the planner hop)",
    )
    return ex


def verdict(flow: http.HTTPFlow) -> str | None:
    """One line for a flow the bridge did not rewrite (None: it rewrote it, or it is a planner-hop flow,
    whose views always show its steps)."""
    meta = flow.metadata.get(META)
    if not isinstance(meta, dict):
        return "bridge: the bridge did not see this request (no bridge metadata on the flow)"
    if is_planner_flow(flow):
        return None
    if meta.get("status") in STEPPED:
        return None
    return f"bridge: {meta.get('status')} ({meta.get('reason')}): the request went upstream as the client sent it"


def _frame(metadata: Metadata) -> int | None:
    """The index of the WebSocket message shown, when the view shows one (websocket_view.py)."""
    if metadata.websocket_message is None or not isinstance(metadata.flow, http.HTTPFlow):
        return None
    return websocket_view.message_index(metadata.flow, metadata.websocket_message)


def _not_for(metadata: Metadata) -> str | None:
    """Why the bridge views have nothing to say about this message (None: they do)."""
    flow = metadata.flow
    if (i := _frame(metadata)) is not None:
        assert isinstance(flow, http.HTTPFlow)
        frame_text = websocket_view.frame_verdict(flow, i)
        return frame_text + "\n" if frame_text is not None else None
    if not isinstance(flow, http.HTTPFlow) or metadata.http_message is not flow.request:
        return "bridge: the bridge views show HTTP requests only\n"
    text = verdict(flow)
    return text + "\n" if text is not None else None


class BridgeStepsContentview(Contentview):
    name = "Bridge steps"

    def prettify(self, data: bytes, metadata: Metadata) -> str:
        if (text := _not_for(metadata)) is not None:
            return text
        assert isinstance(metadata.flow, http.HTTPFlow)
        if (i := _frame(metadata)) is not None:
            text = explain.steps_text(websocket_view.explain_frame(metadata.flow, i, bridge_config()))
            return text + "\n(the message history before and after: view 'Bridge diff')\n"
        if is_planner_flow(metadata.flow):
            return planner_view.steps_text(planner_view.explain_planner(metadata.flow))
        text = explain.steps_text(explain_flow(metadata.flow))
        return text + "\n(the message history before and after: view 'Bridge diff')\n"

    def render_priority(self, data: bytes, metadata: Metadata) -> float:
        return -1 if _not_for(metadata) else PRIORITY


class BridgeDiffContentview(Contentview):
    name = "Bridge diff"

    def prettify(self, data: bytes, metadata: Metadata) -> str:
        if (text := _not_for(metadata)) is not None:
            return text
        assert isinstance(metadata.flow, http.HTTPFlow)
        if is_planner_flow(metadata.flow):
            return planner_view.diff_text(planner_view.explain_planner(metadata.flow))
        i = _frame(metadata)
        ex = (
            explain_flow(metadata.flow)
            if i is None
            else websocket_view.explain_frame(metadata.flow, i, bridge_config())
        )
        notes = "".join(f"note: {n}\n" for n in ex.notes)
        return notes + explain.diff_text(ex)

    def render_priority(self, data: bytes, metadata: Metadata) -> float:
        # Offered for rewritten requests, never chosen over "Bridge steps".
        return -1 if _not_for(metadata) else PRIORITY / 2


steps_view = BridgeStepsContentview()
diff_view = BridgeDiffContentview()


def register() -> None:
    """Add the views to mitmproxy's registry (registering again replaces them: script reloads)."""
    contentviews.add(steps_view)
    contentviews.add(diff_view)
