"""Which protocol a plaintext OTLP port speaks, for the mistake a TCP check cannot see: the
gRPC port given with the http/protobuf protocol, or the reverse.

Both ports accept the connection, so the mistake showed only as an export's failure: the HTTP
exporter read the gRPC server's first frame as a status line ("BadStatusLine('\\x00\\x00\\x18
\\x04...')"), the gRPC one read an HTTP/1 answer as a frame ("Failed parsing HTTP/2"), each
after its retries, and replay waited its 30 s of export timeout before saying so. One
exchange at start tells them apart: an HTTP/2 server (every gRPC server) sends a SETTINGS
frame first, whatever it is sent; an HTTP/1 server answers an HTTP/2 preface with text (a
status line, or an error page). Only `http://` endpoints are asked (TLS would need the
handshake first); an answer that says neither is no claim.
"""

from __future__ import annotations

import socket

from ._common import OtlpEndpoint

__all__ = ["protocol_mismatch"]

#: The client connection preface of HTTP/2 (RFC 9113, 3.4) and an empty SETTINGS frame.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_HTTP1_REQUEST = b"GET / HTTP/1.1\r\nHost: otel-bridge\r\nConnection: close\r\n\r\n"
#: An HTTP/2 frame header: 3 bytes of length, 1 of type (4: SETTINGS), 1 of flags, 4 of stream.
_FRAME_HEADER = 9
_SETTINGS = 4


def protocol_mismatch(endpoint: OtlpEndpoint, timeout: float = 2.0) -> str | None:
    """What to set, when the endpoint's port answers the other OTLP protocol than the one
    configured ("4317 answers gRPC: set OTEL_EXPORTER_OTLP_PROTOCOL=grpc, or use port
    4318"); None when it answers the one configured, or it cannot be told."""
    if not endpoint.url.lower().startswith("http://"):
        return None
    grpc = endpoint.protocol == "grpc"
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(_HTTP2_PREFACE if grpc else _HTTP1_REQUEST)
            answer = _first_bytes(sock)
    except OSError:
        return None
    if grpc and _text(answer):
        return (
            f"{endpoint.port} answers HTTP/1, not gRPC: set "
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, or use port 4317"
        )
    if not grpc and _http2_frame(answer):
        return (
            f"{endpoint.port} answers gRPC (HTTP/2), not OTLP/HTTP: set "
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc, or use port 4318"
        )
    return None


def _first_bytes(sock: socket.socket) -> bytes:
    """The first bytes the server sends, up to an HTTP/2 frame header's worth; what came
    before a timeout or the end of the connection."""
    answer = b""
    while len(answer) < _FRAME_HEADER:
        try:
            chunk = sock.recv(_FRAME_HEADER - len(answer))
        except OSError:  # a timeout or a reset: what came is the answer
            break
        if not chunk:
            break
        answer += chunk
    return answer


def _text(answer: bytes) -> bool:
    """Whether `answer` is text, as every HTTP/1 server's is ("HTTP/1.1 505 ..."; Python's
    http.server answers the HTTP/2 preface with an HTML page and no status line), and never
    an HTTP/2 frame's header (its length's first byte is 0)."""
    return bool(answer) and all(32 <= byte < 127 or byte in b"\r\n\t" for byte in answer)


def _http2_frame(answer: bytes) -> bool:
    """Whether `answer` starts with an HTTP/2 SETTINGS frame (a server's first frame): its
    length fits one frame of settings (a multiple of 6 bytes), on stream 0."""
    if len(answer) < _FRAME_HEADER or answer[3] != _SETTINGS:
        return False
    length = int.from_bytes(answer[:3], "big")
    return length % 6 == 0 and answer[5:9] == b"\x00\x00\x00\x00"
