import CLinux
import Glibc

/// Everything one event loop needs to serve its connections: the hub shard, the connection
/// registry swept once a second for timeouts and heartbeats, and one read buffer shared by all
/// its connections (so an idle connection holds no read buffer of its own).
///
/// Owned by its event loop: every member is read and written on that loop only.
final class LoopContext: @unchecked Sendable {
    let loop: EventLoop
    let hub: LoopHub
    let configuration: HTTPServerConfiguration
    /// Set once on the loop before the first connection.
    unowned(unsafe) var server: HTTPServer!
    var listener: Listener?
    private(set) var isShuttingDown = false

    private var connections: [HTTPConnection] = []
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Where a connection gathers several queued chunks for one `send` (see `OutboundQueue`).
    let writeScratch: UnsafeMutableRawBufferPointer
    /// Streams (SSE, WebSocket) written to in this turn of the loop, flushed when the turn ends.
    private var pendingFlush: [HTTPConnection] = []
    /// Request/response connections written to in this turn: flushed after the streams.
    private var pendingAnswers: [HTTPConnection] = []
    private var flushing: [HTTPConnection] = []
    private var connectionCounter: UInt64 = 0

    /// This loop's counters.
    let metrics = LoopMetrics()

    /// Pre-encoded stream bytes shared by every connection of the loop.
    let heartbeatBytes = SSEEncoder.comment("heartbeat")

    init(hub: LoopHub, configuration: HTTPServerConfiguration) {
        self.loop = hub.loop
        self.hub = hub
        self.configuration = configuration
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        writeScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
        writeScratch.deallocate()
    }

    /// Flushes `connection` when the loop's current turn ends.
    func queueFlush(_ connection: HTTPConnection) {
        if connection.isStream { pendingFlush.append(connection) } else { pendingAnswers.append(connection) }
    }

    /// The loop's turn ended (its ready descriptors handled, or its inbox drained, or its timers
    /// run): every connection written to in it sends what it queued. Writes made while flushing
    /// (a replay refilled as the socket drains) are flushed in the same call.
    ///
    /// Streams go first, answers last: an answer to a publish handled in this turn then leaves
    /// once the message has been written to this loop's subscribers, so a publisher that waits
    /// for its answer sends its next message when the loop can take it, instead of while the loop
    /// is still writing the previous one (where the next message would wait a whole fan-out in
    /// the socket before it is even read: twice the latency, issue 17).
    func flushPending() {
        while !pendingFlush.isEmpty || !pendingAnswers.isEmpty {
            if !pendingFlush.isEmpty {
                swap(&pendingFlush, &flushing)
            } else {
                swap(&pendingAnswers, &flushing)
            }
            for connection in flushing where connection.flushQueued { connection.flush() }
            flushing.removeAll(keepingCapacity: flushing.capacity <= 4096)
        }
    }

    /// Runs on the loop, before its first connection.
    func attach(server: HTTPServer) {
        self.server = server
        loop.onTurnEnd { [unowned self] in self.flushPending() }
    }

    var connectionCount: Int { connections.count }

    private var requestCounter: UInt64 = 0

    /// A request id unique in this process (`X-Request-Id` when the caller sent none).
    func makeRequestID() -> String {
        requestCounter += 1
        return "r\(String(server.node.instanceTag, radix: 16))\(loop.index)x\(String(requestCounter, radix: 36))"
    }

    /// A connection id unique in this process and across nodes: loop index, counter and the node's instance tag.
    func makeConnectionID() -> String {
        connectionCounter += 1
        let epoch = String(server.node.instanceTag, radix: 16)
        return "c\(epoch)\(loop.index)x\(String(connectionCounter, radix: 36))"
    }

    /// A connection another loop accepted for this one (`HTTPServer.contextForNextConnection`).
    func adoptHandedOver(fd: Int32, address: String) {
        guard !isShuttingDown else {
            close(fd)
            return
        }
        adopt(fd: fd, address: address)
    }

    func adopt(fd: Int32, address: String) {
        guard server.perIP.acquire(address) else {
            let body = HTTPResponse.error(429, code: "too_many_connections", message: "too many connections from \(address)")
            let bytes = body.serializedHead(keepAlive: false, versionMinor: 1, contentLength: body.body.count) + body.body
            _ = bytes.withUnsafeBytes { Socket.send(fd, $0) }
            close(fd)
            return
        }
        let connection = HTTPConnection(fd: fd, address: address, context: self)
        do {
            try loop.register(fd: fd, events: EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue, handler: connection)
        } catch {
            server.perIP.release(address)
            close(fd)
            return
        }
        connection.registryIndex = connections.count
        connections.append(connection)
        metrics.connectionsAccepted &+= 1
    }

    func forget(_ connection: HTTPConnection) {
        let index = connection.registryIndex
        guard index >= 0, index < connections.count, connections[index] === connection else { return }
        let last = connections.removeLast()
        if index < connections.count {
            connections[index] = last
            last.registryIndex = index
        }
        connection.registryIndex = -1
        server.perIP.release(connection.remoteAddress)
    }

    /// Once a second: timeouts, token expiry and heartbeats.
    func tick() {
        let now = monotonicNanoseconds()
        let wallClock = unixSeconds()
        // A copy, because a tick may close (and so unregister) connections.
        for connection in connections { connection.tick(now: now, unixNow: wallClock) }
    }

    /// This loop's part of a `ServerSnapshot`.
    func snapshot() -> ServerSnapshot {
        var snapshot = ServerSnapshot()
        for connection in connections {
            snapshot.connections[connection.kind, default: 0] += 1
        }
        snapshot.connectionsAccepted = metrics.connectionsAccepted
        snapshot.slowConsumerCuts = metrics.slowConsumerCuts
        snapshot.messagesDelivered = hub.deliveredCount
        snapshot.responses = metrics.responses.map { ($0.key.route, $0.key.status, $0.value) }
        snapshot.loopsAnswering = 1
        return snapshot
    }

    /// Ends every stream of app `app`'s session `sid` on this loop.
    func endSession(_ sid: String, app: String) {
        for connection in connections { connection.endSession(sid, app: app) }
    }

    /// Ends every stream of app `app` on this loop.
    func endApp(_ app: String) {
        for connection in connections { connection.endApp(app) }
    }

    /// Stops accepting and ends every connection (SSE streams get `event: shutdown`).
    func shutdown() {
        isShuttingDown = true
        if let listener {
            // The socket is shared by every loop; the server closes it once.
            loop.deregister(fd: listener.fd)
            self.listener = nil
        }
        for connection in connections { connection.shutdown() }
    }

    /// Connections that still owe an answer or have bytes queued (`HTTPServer.finishShutdown`).
    func busyConnectionCount() -> Int {
        connections.reduce(0) { $0 + ($1.isBusyForShutdown ? 1 : 0) }
    }
}
