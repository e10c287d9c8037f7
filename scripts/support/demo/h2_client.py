"""One unary gRPC call as the gateway makes it, for the demo's planner listener."""

from __future__ import annotations

import socket
from collections.abc import Sequence


def grpc_post(port: int, path: str, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> tuple[str, str, bytes]:
    """One unary gRPC call as the gateway makes it: prior-knowledge HTTP/2 (no TLS, no upgrade),
    the body sent as given (already framed). (HTTP status, grpc-status, response body)."""
    from h2.config import H2Configuration
    from h2.connection import H2Connection
    from h2.events import DataReceived, ResponseReceived, StreamEnded, StreamReset, TrailersReceived

    conn = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
    status, grpc_status, data = "", "", bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        conn.initiate_connection()
        sid = conn.get_next_available_stream_id()
        request_headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", f"127.0.0.1:{port}"),
            (":path", path),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            *headers,
        ]
        conn.send_headers(sid, request_headers)
        step = conn.max_outbound_frame_size  # the bodies here are far below the initial window
        for i in range(0, len(body), step):
            conn.send_data(sid, body[i : i + step], end_stream=i + step >= len(body))
        sock.sendall(conn.data_to_send())
        ended = False
        while not ended:
            chunk = sock.recv(65536)
            if not chunk:
                break
            for event in conn.receive_data(chunk):
                if isinstance(event, ResponseReceived | TrailersReceived):
                    h = dict(event.headers)
                    status = h.get(":status", status)
                    grpc_status = h.get("grpc-status", grpc_status)
                elif isinstance(event, DataReceived):
                    data += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, StreamEnded | StreamReset):
                    ended = True
            sock.sendall(conn.data_to_send())
        conn.close_connection()
        sock.sendall(conn.data_to_send())
    return status, grpc_status, bytes(data)
