"""The Cascade planner's wire: gRPC and Connect framing, the calls that carry tool
history (:mod:`.calls`), the steps splice, step corrections and the per-cascade ledger.

Pure, sans-IO (as h11 is): bytes in, values out. No mitmproxy, no I/O, no
module-level mutable state; the ledger's state is passed in by the caller.
The entry point for a request body is :func:`correct_request`.
"""

from ..evidence import Observation
from .calls import CALLS, Call, call_of, decode_interaction
from .correct import PlannerResult, correct_request, redact_body
from .corrections import Change, Corrected, Evidence, correct
from .framing import Framed, FramingError, reframe, unframe
from .ledger import delivered_prefix, step_digest
from .request import CascadeRequest, parse_request, redacted, splice
from .steps import StepView, to_json, view
from .wire import Field, WireError, fields

__all__ = [
    "CALLS",
    "Call",
    "CascadeRequest",
    "Change",
    "Corrected",
    "Evidence",
    "Field",
    "Framed",
    "FramingError",
    "Observation",
    "PlannerResult",
    "StepView",
    "WireError",
    "call_of",
    "correct",
    "correct_request",
    "decode_interaction",
    "delivered_prefix",
    "fields",
    "parse_request",
    "redact_body",
    "redacted",
    "reframe",
    "splice",
    "step_digest",
    "to_json",
    "unframe",
    "view",
]
