import Foundation
import LoopbackSockets
import PushTestSupport
import Synchronization
import Testing

@testable import PushHTTP

/// A local HTTP/2-over-TLS server for the HTTP2Client tests: Python hypercorn running a tiny ASGI app,
/// with a fresh CA and leaf certificate from trustme. Each instance gets its own temp directory and port;
/// the Python side exits when our stdin pipe closes, so a crashed test run leaves no orphans.
final class HTTP2ClientTestServer: @unchecked Sendable {
    let port: Int
    let directory: URL
    private let process: Process
    private let stdinPipe: Pipe

    var caFile: String { directory.appendingPathComponent("ca.pem").path }
    func url(_ path: String, host: String = "127.0.0.1") -> String { "https://\(host):\(port)\(path)" }

    /// The interpreter: `HERALD_TEST_PYTHON` or `python3` on PATH.
    static var python: String { ProcessInfo.processInfo.environment["HERALD_TEST_PYTHON"] ?? "python3" }

    /// True when python3 can import hypercorn, h2 and trustme (checked once).
    static let available: Bool = {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [python, "-c", "import hypercorn, h2, trustme"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }()

    struct StartFailure: Error, CustomStringConvertible { let description: String }

    /// Starts a server; `maxStreams` is hypercorn's SETTINGS_MAX_CONCURRENT_STREAMS (default 100),
    /// `maxRequestsPerConnection` its keep_alive_max_requests (default 1000; hypercorn then sends GOAWAY
    /// but never answers the stream it just accepted — use `goawayAfter` for a well-behaved GOAWAY).
    /// With `goawayAfter: n` a raw h2 server replaces hypercorn: it answers `n` requests (any path, JSON
    /// `{"n":…,"stream":…}`) per connection, then sends GOAWAY naming the last answered stream and closes.
    /// With `http1Only` hypercorn offers only ALPN `http/1.1` (a server without HTTP/2).
    /// With `silentAfterGoSilent` a raw h2 server replaces hypercorn: it answers every request (JSON
    /// `{"stream":…}`) until one asks for `/go-silent`; from then on that connection reads and writes
    /// nothing, not even a PING's ACK (a connection a NAT dropped without a word), while new
    /// connections are served as before.
    init(maxStreams: Int = 100, maxRequestsPerConnection: Int = 1000, goawayAfter: Int? = nil, http1Only: Bool = false,
         silentAfterGoSilent: Bool = false) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("h2test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let script = dir.appendingPathComponent("server.py")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        directory = dir

        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments: [String] = [Self.python, script.path, dir.path, String(maxStreams), String(maxRequestsPerConnection)]
        if let goawayAfter { arguments.append("goaway:\(goawayAfter)") }
        if http1Only { arguments.append("h1only") }
        if silentAfterGoSilent { arguments.append("silent") }
        p.arguments = arguments
        let stdinPipe = Pipe(), stdoutPipe = Pipe()
        p.standardInput = stdinPipe
        p.standardOutput = stdoutPipe
        p.standardError = FileHandle.standardError
        try p.run()
        process = p
        self.stdinPipe = stdinPipe

        // Wait for the "PORT n" line (the port is also written to <dir>/port) on a reader thread.
        let found = Mutex<Int?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let reader = stdoutPipe.fileHandleForReading
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                if let text = String(data: buffer, encoding: .utf8),
                   let line = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }),
                   let n = Int(line.dropFirst(5).trimmingCharacters(in: .whitespaces)) {
                    found.withLock { $0 = n }
                    break
                }
            }
            ready.signal()
        }
        let waited = ready.wait(timeout: .now() + 30)
        guard waited == .success, let port = found.withLock({ $0 }) else {
            Glibc.kill(p.processIdentifier, SIGKILL)   // SIGTERM may be blocked: the child inherits a dispatch worker's mask
            throw StartFailure(description: "test server did not report its port (python: \(Self.python))")
        }
        self.port = port
    }

    /// SIGKILLs the server (abrupt: no GOAWAY, sockets reset) and waits for it to exit.
    func kill() {
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    func stop() {
        kill()
        try? stdinPipe.fileHandleForWriting.close()
        try? FileManager.default.removeItem(at: directory)
    }

    static let script = #"""
# HTTP/2-over-TLS test server for HTTP2Client tests (hypercorn + trustme).
# argv: workdir [h2_max_concurrent_streams] [keep_alive_max_requests] [goaway:N]
# With goaway:N a raw h2 server replaces hypercorn: it answers N requests per connection, then GOAWAY.
# Writes ca.pem into workdir, prints "PORT <n>" on stdout once listening, and exits when stdin closes.
import asyncio, base64, json, os, socket, sys, threading
import trustme
from hypercorn.config import Config
from hypercorn.asyncio import serve

workdir = sys.argv[1]
ca = trustme.CA()
leaf = ca.issue_cert("localhost", "127.0.0.1")
ca.cert_pem.write_to_path(os.path.join(workdir, "ca.pem"))
leaf.cert_chain_pems[0].write_to_path(os.path.join(workdir, "cert.pem"))
leaf.private_key_pem.write_to_path(os.path.join(workdir, "key.pem"))

def watch_stdin():
    try:
        sys.stdin.buffer.read()
    finally:
        os._exit(0)
threading.Thread(target=watch_stdin, daemon=True).start()

state = {"hanging": 0, "requests": 0}
cond = None

async def read_body(receive):
    body = b""
    while True:
        m = await receive()
        if m["type"] == "http.request":
            body += m.get("body", b"")
            if not m.get("more_body"):
                return body
        else:
            return body

async def respond(send, status, body, headers=()):
    hs = [(b"content-length", str(len(body)).encode())] + [(k.encode(), v.encode()) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": hs})
    await send({"type": "http.response.body", "body": body})

async def app(scope, receive, send):
    global cond
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif m["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"}); return
    if cond is None:
        cond = asyncio.Condition()
    path = scope["path"]
    qs = dict(p.split("=", 1) for p in scope["query_string"].decode().split("&") if "=" in p)
    body = await read_body(receive)
    state["requests"] += 1
    if path == "/echo":
        out = {"method": scope["method"], "path": path, "http_version": scope["http_version"],
               "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
               "body_b64": base64.b64encode(body).decode()}
        await respond(send, 200, json.dumps(out).encode(),
                      [("content-type", "application/json"), ("apns-id", "abc-123"), ("x-multi", "one"), ("x-multi", "two")])
    elif path.startswith("/status/"):
        code = int(path.split("/")[2])
        await respond(send, code, json.dumps({"reason": qs.get("reason", "BadDeviceToken")}).encode(),
                      [("content-type", "application/json")])
    elif path == "/big":
        await respond(send, 200, b"x" * int(qs.get("n", "100000")), [("content-type", "application/octet-stream")])
    elif path == "/hang":
        async with cond:
            state["hanging"] += 1
            cond.notify_all()
            await cond.wait_for(lambda: state.get("released"))
        await respond(send, 200, b'{"released":true}', [("content-type", "application/json")])
    elif path == "/release-hanging":
        async with cond:
            state["released"] = True
            cond.notify_all()
        await respond(send, 200, b'{"ok":true}', [("content-type", "application/json")])
    elif path == "/wait-hanging":
        n = int(qs.get("n", "1"))
        async with cond:
            await cond.wait_for(lambda: state["hanging"] >= n)
        await respond(send, 200, json.dumps({"hanging": state["hanging"]}).encode())
    else:
        await respond(send, 200, b'{"ok":true}', [("content-type", "application/json")])

class RawH2(asyncio.Protocol):
    """A raw h2 server connection (no hypercorn): the h2 state machine and its preface."""
    def __init__(self):
        import h2.config, h2.connection
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))

    def connection_made(self, transport):
        self.transport = transport
        self.conn.initiate_connection()
        transport.write(self.conn.data_to_send())

class GoawayH2(RawH2):
    """Raw h2 server that answers `limit` requests per connection, then sends a proper GOAWAY
    naming the last stream it answered and closes: streams above it were never processed."""
    def __init__(self, limit):
        super().__init__()
        self.limit = limit
        self.bodies = {}
        self.answered = 0
        self.closing = False

    def data_received(self, data):
        import h2.events, h2.errors
        if self.closing:
            return
        for ev in self.conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                self.bodies[ev.stream_id] = b""
            elif isinstance(ev, h2.events.DataReceived):
                self.bodies[ev.stream_id] = self.bodies.get(ev.stream_id, b"") + ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded) and not self.closing:
                self.answered += 1
                body = json.dumps({"n": self.answered, "stream": ev.stream_id}).encode()
                self.conn.send_headers(ev.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                self.conn.send_data(ev.stream_id, body, end_stream=True)
                if self.answered >= self.limit:
                    self.closing = True
                    self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR, last_stream_id=ev.stream_id)
                    self.transport.write(self.conn.data_to_send())
                    self.transport.close()
                    return
        self.transport.write(self.conn.data_to_send())

class GoSilentH2(RawH2):
    """Raw h2 server that answers every request until one asks for /go-silent: from then on the
    connection discards what it reads and writes nothing (no answer, no PING ACK)."""
    def __init__(self):
        super().__init__()
        self.paths = {}
        self.silent = False

    def data_received(self, data):
        import h2.events
        if self.silent:
            return
        for ev in self.conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                self.paths[ev.stream_id] = dict(ev.headers).get(":path")
            elif isinstance(ev, h2.events.DataReceived):
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                if self.paths.get(ev.stream_id) == "/go-silent":
                    self.silent = True
                    return
                body = json.dumps({"stream": ev.stream_id}).encode()
                self.conn.send_headers(ev.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                self.conn.send_data(ev.stream_id, body, end_stream=True)
        self.transport.write(self.conn.data_to_send())

goaway_limit = int(sys.argv[4].split(":")[1]) if len(sys.argv) > 4 and sys.argv[4].startswith("goaway:") else None

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
sock.listen(1024)
port = sock.getsockname()[1]

config = Config()
config.bind = [f"fd://{sock.fileno()}"]
config.certfile = os.path.join(workdir, "cert.pem")
config.keyfile = os.path.join(workdir, "key.pem")
config.accesslog = None
config.errorlog = None
config.loglevel = "ERROR"
if len(sys.argv) > 2: config.h2_max_concurrent_streams = int(sys.argv[2])
if len(sys.argv) > 3: config.keep_alive_max_requests = int(sys.argv[3])
if "h1only" in sys.argv: config.alpn_protocols = ["http/1.1"]
with open(os.path.join(workdir, "port"), "w") as f:
    f.write(str(port))
print(f"PORT {port}", flush=True)
async def serve_raw(factory):
    import ssl
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(config.certfile, config.keyfile)
    ctx.set_alpn_protocols(["h2"])
    server = await asyncio.get_running_loop().create_server(factory, sock=sock, ssl=ctx)
    await server.serve_forever()

if "silent" in sys.argv[4:]:
    asyncio.run(serve_raw(GoSilentH2))
elif goaway_limit is None:
    asyncio.run(serve(app, config))
else:
    asyncio.run(serve_raw(lambda: GoawayH2(goaway_limit)))
"""#
}

/// Collects completions from any thread; waits with a deadline (no sleeps).
final class HTTP2ClientCompletions: Sendable {
    typealias Item = (result: Result<PushHTTPResponse, PushTransportError>, info: PushTransferInfo)
    private let items = Mutex<[Int: Item]>([:])
    private let semaphore = DispatchSemaphore(value: 0)

    func record(_ index: Int) -> @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void {
        { result, info in
            self.items.withLock { $0[index] = (result, info) }
            self.semaphore.signal()
        }
    }

    /// Waits until `count` completions arrived in total, or the deadline passes; returns what arrived.
    @discardableResult
    func wait(for count: Int, timeout seconds: Double) -> [Int: Item] {
        let deadline = DispatchTime.now() + seconds
        while items.withLock({ $0.count }) < count {
            if semaphore.wait(timeout: deadline) == .timedOut { break }
        }
        return items.withLock { $0 }
    }

    var snapshot: [Int: Item] { items.withLock { $0 } }
}

/// Which HTTP/2 push client a shared scenario runs on.
enum H2ClientKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case curl, native
    var testDescription: String { rawValue }
    func make(_ configuration: HTTP2Client.Configuration) throws(PushTransportError) -> any HTTP2PushClient {
        switch self {
        case .curl: return try HTTP2Client(configuration: configuration)
        case .native: return try NativeHTTP2Client(configuration: configuration)
        }
    }
}

extension HTTP2PushClient {
    /// Sends one request and blocks (with a deadline) for its completion; nil when the deadline passed.
    func sendAndWait(_ request: PushHTTPRequest, timeout: Double = 20) -> HTTP2ClientCompletions.Item? {
        let c = HTTP2ClientCompletions()
        sendReportingInfo(request, completion: c.record(0))
        return c.wait(for: 1, timeout: timeout)[0]
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on (bound, then closed).
func http2ClientClosedPort() -> Int {
    guard let port = LoopbackSocket.freePort() else { preconditionFailure("no loopback port") }
    return port
}
