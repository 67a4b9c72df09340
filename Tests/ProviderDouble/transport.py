"""HTTP/2 (ALPN `h2`) and HTTP/1.1 over TLS on one listening socket, written on asyncio with the
`h2` and `h11` state machines.

The double owns its transport (instead of running under an ASGI server) so that a test can make it
do what a real provider's front end does at the connection level: send GOAWAY with APNs-style
debug data (`{"reason":"Shutdown"}`), reset one stream, or drop the TCP connection; and so that
per-connection state (APNs ties provider-token updates to a connection) has a real connection
identity.

Everything here runs on the one asyncio loop of the process: the session objects, the per-connection
`state` dictionaries and the handler are only touched from that loop, so they need no locks.
"""
from __future__ import annotations

import asyncio
import itertools
import socket
import ssl
import sys
import traceback
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Optional
from urllib.parse import parse_qsl, urlsplit

import h11
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


class ConnectionInfo:
    """One accepted TCP+TLS connection, as handlers see it.

    `state` is a free dictionary for handlers (owned by the event loop, like everything else).
    """

    _ids = itertools.count(1)

    def __init__(self, client, alpn: Optional[str]):
        self.id = next(self._ids)
        self.client = client
        self.alpn = alpn
        self.state: dict = {}


@dataclass
class Request:
    method: str
    path: str
    query: dict
    raw_path: str
    headers: list  # [(lower-case name, value)] in arrival order, pseudo-headers removed
    body: bytes
    body_size: int  # bytes received, even past the kept `body`
    http_version: str
    conn: ConnectionInfo
    stream_id: Optional[int] = None

    def header(self, name: str) -> Optional[str]:
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def header_all(self, name: str) -> list:
        return [v for k, v in self.headers if k == name]


@dataclass
class Response:
    status: int
    headers: list = field(default_factory=list)
    body: bytes = b""
    # Connection-level behaviour instead of (or after) the response:
    #   None: answer normally.
    #   "goaway": send GOAWAY (debug data `goaway_debug`) and close; this stream is left
    #             unanswered. `goaway_last_stream` says whether the stream counts as processed
    #             ("this") or refused ("before", safe to retry).
    #   "goaway_after": answer normally, then GOAWAY and close once the answer is written.
    #   "reset": RST_STREAM (INTERNAL_ERROR) on this stream only.
    #   "close": drop the TCP connection without a word.
    action: Optional[str] = None
    goaway_debug: bytes = b""
    goaway_code: int = 0
    goaway_last_stream: str = "this"


Handler = Callable[[Request], Awaitable[Response]]


def _split_path(raw: str):
    parts = urlsplit(raw)
    return parts.path or "/", dict(parse_qsl(parts.query, keep_blank_values=True))


def _internal_error(exc: BaseException) -> Response:
    traceback.print_exception(exc, file=sys.stderr)
    body = ('{"error":"provider double internal error","detail":%s}' % _json_str(repr(exc))).encode()
    return Response(500, [("content-type", "application/json")], body)


def _json_str(s: str) -> str:
    import json

    return json.dumps(s)


class Server:
    """Accepts TLS connections on a pre-bound socket and serves `handler` over h2 or HTTP/1.1."""

    def __init__(self, handler: Handler, ssl_ctx: ssl.SSLContext, *, max_streams: int = 1000,
                 max_body: int = 1 << 20, on_connection: Optional[Callable] = None):
        self.handler = handler
        self.ssl_ctx = ssl_ctx
        self.max_streams = max_streams
        self.max_body = max_body
        self.on_connection = on_connection
        self.sessions: set = set()
        self._server: Optional[asyncio.AbstractServer] = None

    async def start(self, sock) -> None:
        self._server = await asyncio.start_server(
            self._accept, sock=sock, ssl=self.ssl_ctx, ssl_handshake_timeout=10
        )

    async def close(self) -> None:
        if self._server:
            self._server.close()
        for s in list(self.sessions):
            s.abort()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # Small writes (HEADERS, then DATA) must not wait for the peer's delayed ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ssl_obj = writer.get_extra_info("ssl_object")
        alpn = ssl_obj.selected_alpn_protocol() if ssl_obj else None
        info = ConnectionInfo(writer.get_extra_info("peername"), alpn)
        if self.on_connection:
            self.on_connection(info)
        first = b""
        if alpn is None:
            # No ALPN: speak h2 if the client starts with the connection preface, else HTTP/1.1.
            try:
                first = await reader.read(len(H2_PREFACE))
            except (ConnectionError, ssl.SSLError):
                writer.close()
                return
            if first and H2_PREFACE.startswith(first):
                info.alpn = "h2"
        session = (H2Session if info.alpn == "h2" else H11Session)(self, reader, writer, info, first)
        self.sessions.add(session)
        try:
            await session.run()
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            self.sessions.discard(session)
            session.abort()

    async def dispatch(self, req: Request) -> Response:
        try:
            return await self.handler(req)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in the double answers 500 instead of hanging the client
            return _internal_error(exc)


class H2Session:
    def __init__(self, server: Server, reader, writer, info: ConnectionInfo, first: bytes):
        self.server, self.reader, self.writer, self.info = server, reader, writer, info
        self.first = first
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding=None)
        )
        self.conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: server.max_streams,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
            },
        )
        self.streams: dict = {}  # stream id -> {"headers", "body", "size", "task"}
        self.window_open: dict = {}  # stream id -> asyncio.Event
        self.closed = False

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def abort(self) -> None:
        self.closed = True
        for st in self.streams.values():
            task = st.get("task")
            if task and not task.done():
                task.cancel()
        for ev in self.window_open.values():
            ev.set()
        if not self.writer.is_closing():
            self.writer.close()

    async def run(self) -> None:
        self.conn.initiate_connection()
        self.flush()
        data = self.first
        while not self.closed:
            if not data:
                data = await self.reader.read(65536)
                if not data:
                    break
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.flush()
                break
            data = b""
            for ev in events:
                self.on_event(ev)
            self.flush()
            await self.writer.drain()

    def _wake(self, stream_id: Optional[int]) -> None:
        if not stream_id:
            for ev in self.window_open.values():
                ev.set()
        elif stream_id in self.window_open:
            self.window_open[stream_id].set()

    def on_event(self, ev) -> None:
        if isinstance(ev, h2.events.RequestReceived):
            self.streams[ev.stream_id] = {"headers": ev.headers, "body": bytearray(), "size": 0}
        elif isinstance(ev, h2.events.DataReceived):
            st = self.streams.get(ev.stream_id)
            if st is not None:
                st["size"] += len(ev.data)
                room = self.server.max_body - len(st["body"])
                if room > 0:
                    st["body"] += ev.data[:room]
            self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            st = self.streams.get(ev.stream_id)
            if st is not None:
                st["task"] = asyncio.ensure_future(self.serve_stream(ev.stream_id, st))
        elif isinstance(ev, h2.events.StreamReset):
            st = self.streams.pop(ev.stream_id, None)
            if st and st.get("task") and not st["task"].done():
                st["task"].cancel()
            self._wake(ev.stream_id)
        elif isinstance(ev, h2.events.WindowUpdated):
            self._wake(ev.stream_id)
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            self._wake(None)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.closed = True
            self._wake(None)

    def _request(self, stream_id: int, st: dict) -> Request:
        pseudo, headers = {}, []
        for k, v in st["headers"]:
            k, v = k.decode("latin-1"), v.decode("latin-1")
            if k.startswith(":"):
                pseudo[k] = v
            else:
                headers.append((k.lower(), v))
        raw = pseudo.get(":path", "")
        path, query = _split_path(raw)
        return Request(pseudo.get(":method", ""), path, query, raw, headers, bytes(st["body"]),
                       st["size"], "2", self.info, stream_id)

    async def serve_stream(self, stream_id: int, st: dict) -> None:
        try:
            resp = await self.server.dispatch(self._request(stream_id, st))
            if self.closed:
                return
            if resp.action == "goaway":
                last = stream_id if resp.goaway_last_stream == "this" else max(stream_id - 2, 0)
                self.conn.close_connection(resp.goaway_code, resp.goaway_debug, last_stream_id=last)
                self.flush()
                await self.writer.drain()
                self.abort()
            elif resp.action == "reset":
                self.conn.reset_stream(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
                self.flush()
            elif resp.action == "close":
                self.writer.transport.abort()
                self.abort()
            else:
                await self.send(stream_id, resp)
                if resp.action == "goaway_after":
                    self.conn.close_connection(resp.goaway_code, resp.goaway_debug)
                    self.flush()
                    await self.writer.drain()
                    self.abort()
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, ConnectionError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            self.streams.pop(stream_id, None)
            self.window_open.pop(stream_id, None)

    async def send(self, stream_id: int, resp: Response) -> None:
        body = resp.body or b""
        headers = [(":status", str(resp.status))] + [(k.lower(), v) for k, v in resp.headers]
        if body and not any(k.lower() == "content-length" for k, _ in resp.headers):
            headers.append(("content-length", str(len(body))))
        self.conn.send_headers(stream_id, headers, end_stream=not body)
        off = 0
        while off < len(body):
            if self.closed:
                return
            window = self.conn.local_flow_control_window(stream_id)
            if window <= 0:
                ev = self.window_open.setdefault(stream_id, asyncio.Event())
                ev.clear()
                await ev.wait()
                continue
            n = min(window, self.conn.max_outbound_frame_size, len(body) - off)
            self.conn.send_data(stream_id, body[off:off + n], end_stream=off + n == len(body))
            off += n
            self.flush()
            await self.writer.drain()
        self.flush()


class H11Session:
    def __init__(self, server: Server, reader, writer, info: ConnectionInfo, first: bytes):
        self.server, self.reader, self.writer, self.info = server, reader, writer, info
        self.first = first
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=65536)

    def abort(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()

    async def run(self) -> None:
        if self.first:
            self.conn.receive_data(self.first)
        req_ev, body, size = None, bytearray(), 0
        while True:
            try:
                ev = self.conn.next_event()
            except h11.RemoteProtocolError:
                await self._write(h11.Response(status_code=400, headers=[("connection", "close"),
                                                                         ("content-length", "0")]))
                return
            if ev is h11.NEED_DATA:
                data = await self.reader.read(65536)
                self.conn.receive_data(data)
                if not data and self.conn.their_state is h11.IDLE:
                    return
                continue
            if isinstance(ev, h11.Request):
                req_ev, body, size = ev, bytearray(), 0
                if self.conn.they_are_waiting_for_100_continue:  # curl does for bodies > 1 KiB
                    await self._write(h11.InformationalResponse(status_code=100, headers=[]))
            elif isinstance(ev, h11.Data):
                size += len(ev.data)
                room = self.server.max_body - len(body)
                if room > 0:
                    body += ev.data[:room]
            elif isinstance(ev, h11.EndOfMessage):
                raw = req_ev.target.decode("latin-1")
                path, query = _split_path(raw)
                headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in req_ev.headers]
                req = Request(req_ev.method.decode("latin-1"), path, query, raw, headers,
                              bytes(body), size, "1.1", self.info)
                resp = await self.server.dispatch(req)
                if resp.action in ("goaway", "close", "reset"):
                    self.writer.transport.abort()
                    return
                hdrs = [(k, v) for k, v in resp.headers if k.lower() != "content-length"]
                hdrs.append(("content-length", str(len(resp.body))))
                if resp.action == "goaway_after":
                    hdrs.append(("connection", "close"))
                out = self.conn.send(h11.Response(status_code=resp.status, headers=hdrs))
                if resp.body:
                    out += self.conn.send(h11.Data(data=resp.body))
                out += self.conn.send(h11.EndOfMessage())
                self.writer.write(out)
                await self.writer.drain()
                if self.conn.our_state is h11.MUST_CLOSE or resp.action == "goaway_after":
                    return
                try:
                    self.conn.start_next_cycle()
                except h11.LocalProtocolError:
                    return
            elif isinstance(ev, h11.ConnectionClosed):
                return

    async def _write(self, ev) -> None:
        data = self.conn.send(ev)
        if data:
            self.writer.write(data)
            await self.writer.drain()


def make_ssl_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # APNs: TLS 1.2 or later
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    ctx.options |= ssl.OP_NO_COMPRESSION
    return ctx
