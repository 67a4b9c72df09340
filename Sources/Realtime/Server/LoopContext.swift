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
    /// Streams (SSE, WebSocket) written to and not yet flushed, oldest first; those before
    /// `streamHead` are done. Flushed a slice at a time (`flushPending`).
    private var pendingFlush: [HTTPConnection] = []
    private var streamHead = 0
    /// Stream flushes taken off `pendingFlush` before its current index 0: `sweptBase + streamHead`
    /// is how far the loop's stream writes have gone since it started (`afterWrites`).
    private var sweptBase: UInt64 = 0
    /// Actions waiting for the stream flushes queued before them, with the position they wait
    /// for, in order of position.
    private var writeWaiters: [(position: UInt64, action: () -> Void)] = []
    /// Request/response connections written to: flushed once the stream sweep reaches `answersDueAt`.
    private var pendingAnswers: [HTTPConnection] = []
    /// The sweep position (`sweptBase + streamHead`) at which the pending answers go; nil until
    /// `flushPending` first sees them.
    private var answersDueAt: UInt64?
    /// Other loops that were writing streams when the pending answers were first seen and have
    /// not yet written their share (`answerGates`): the answers wait for them too.
    private var gatesOutstanding = 0
    /// Tells gates that arrive (or time out) for an earlier batch of answers from the current one's.
    private var gateGeneration: UInt64 = 0
    private var gateTimer: TimerID?
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

    /// Streams flushed per turn end at most (`flushPending`).
    static let streamFlushesPerTurn = 64

    /// An answer waits until 1/`answerOverlap` of the streams pending when it was written have
    /// been flushed, on this loop and on every other loop writing streams (at least one slice,
    /// `flushPending`, `answerGates`): a publisher that waits for each answer then has up to this
    /// many messages in one sweep of each loop's streams, so each `send` carries about this many
    /// of them, while a message still reaches every subscriber within about one sweep. Measured
    /// on the fan-out benchmark's closed loop (issue 17): answering on the publisher's loop only,
    /// 2 → 5.3, 4 → 2.6–2.9, 8 → 1.6, 16 → 1.8 µs of Herald CPU per delivery (6.5–7.5 answering
    /// after the whole sweep). Waiting for every loop as well, on a busy machine beside nchan
    /// (medians of 7–8 alternating pairs, Benchmarks/RESULTS.md "fanoutp99"): 4 → 2.2× nchan's
    /// deliveries/s, p99 0.54× nchan's, 3.4 µs per delivery; 6 → 2.9×, p99 0.3× (below nchan's
    /// in every pair), 2.8 µs; 8 → 2.7×, p99 1.1×, 2.7 µs.
    static let answerOverlap = 6

    /// The longest an answer waits for another loop's share (`answerGates`): a loop wedged or
    /// starved must not hold the answers of every other loop.
    static let gateTimeoutNanoseconds: UInt64 = 1_000_000_000

    /// The loop's turn ended (its ready descriptors handled, or its inbox drained, or its timers
    /// run): up to `streamFlushesPerTurn` streams written to send what they queued, oldest first,
    /// then, once the sweep has reached `answersDueAt` and every other loop asked has written its
    /// share (`answerGates`), every answer written to.
    ///
    /// Why slices (issue 17): a message to 10,000 subscribers costs 10,000 `send`s, ~30 ms of one
    /// core, almost all of it the kernel's per-packet work. Between two slices the loop polls
    /// again, so the next publish is read and queued while the previous one is still being
    /// written: the streams not yet flushed then carry both messages in one `send`, and a
    /// closed-loop publisher's messages cost a fraction of a packet per subscriber instead of one
    /// each. A stream that was flushed gets the new message at the end of the sweep, so each
    /// message reaches every subscriber within about one sweep of the loop's streams.
    ///
    /// Answers go once a part of the sweep is written (`answerOverlap`), not the whole of it: a
    /// publisher that waits for its answer sends its next message while the loop is still
    /// writing, and it is taken between two slices instead of waiting in the socket for a whole
    /// fan-out (twice the latency). A publisher is still paced: each answer follows a sixth of
    /// this loop's pending stream writes and of every other busy loop's, and the publish route
    /// waits for every loop when one falls far behind (`RealtimeNode.isBehind`, counted until
    /// the writes are flushed, through `LoopHub.afterWrites`).
    ///
    /// - Returns: true when streams are left for the next turn end (the loop polls without
    ///   sleeping and calls this again).
    func flushPending() -> Bool {
        if !pendingAnswers.isEmpty, answersDueAt == nil {
            answersDueAt = sweptBase &+ UInt64(streamHead + shareToWrite())
            answerGates()
        }
        var budget = Self.streamFlushesPerTurn
        while streamHead < pendingFlush.count, budget > 0 {
            let connection = pendingFlush[streamHead]
            streamHead += 1
            // Flushed already (a bound was judged, or the socket became writable) or closed.
            guard connection.flushQueued else { continue }
            connection.flush()
            budget -= 1
        }
        if streamHead == pendingFlush.count {
            sweptBase &+= UInt64(streamHead)
            pendingFlush.removeAll(keepingCapacity: pendingFlush.capacity <= 4096)
            streamHead = 0
        } else if streamHead >= 4096, streamHead * 2 >= pendingFlush.count {
            // A sweep that never quite ends (a publisher as fast as the writes) must not grow the array forever.
            sweptBase &+= UInt64(streamHead)
            pendingFlush.removeFirst(streamHead)
            streamHead = 0
        }
        runWriteWaiters()
        if let due = answersDueAt, sweptBase &+ UInt64(streamHead) >= due, gatesOutstanding == 0 {
            answersDueAt = nil
            if let timer = gateTimer {
                loop.cancel(timer: timer)
                gateTimer = nil
            }
        } else if answersDueAt != nil {
            // Only this loop's own share needs more turn ends; another loop's arrives in the inbox.
            return streamHead < pendingFlush.count
        }
        while !pendingAnswers.isEmpty {
            swap(&pendingAnswers, &flushing)
            for connection in flushing where connection.flushQueued { connection.flush() }
            flushing.removeAll(keepingCapacity: flushing.capacity <= 4096)
        }
        return streamHead < pendingFlush.count
    }

    /// Runs `action` once every stream write queued on this loop so far has been flushed (sent,
    /// or left waiting for a full socket to drain): at once when none is pending. The hub's
    /// `afterWrites` (back-pressure and the push planner's barrier).
    func afterQueuedWrites(_ action: @escaping () -> Void) {
        whenSwept(to: sweptBase &+ UInt64(pendingFlush.count), action)
    }

    /// The stream flushes, from the sweep's current position, that make an answer's share:
    /// 1/`answerOverlap` of those pending, at least one slice, or all when fewer.
    private func shareToWrite() -> Int {
        let remaining = pendingFlush.count - streamHead
        return max(min(remaining, Self.streamFlushesPerTurn), remaining / Self.answerOverlap)
    }

    /// Asks every other loop that has stream writes queued (`LoopHub.queuedDeliveries`, which
    /// counts a message from the moment it is handed over, so a publish still in that loop's
    /// inbox counts) to report once it has written its share of them (`afterShareWritten`); the
    /// pending answers wait for those reports, at most `gateTimeoutNanoseconds`.
    ///
    /// Why (issue 17): a publish goes to every loop, but only the loop that took it used to pace
    /// its answer. A loop that got less CPU then took several more messages per sweep than the
    /// publisher's, its sweep grew, and so did the latency of every subscriber on it: which loop
    /// the publisher landed on decided the fan-out's p99. Waiting for each loop's share paces a
    /// closed-loop publisher to the slowest loop, so every loop has about `answerOverlap`
    /// messages per sweep.
    private func answerGates() {
        gateGeneration &+= 1
        let generation = gateGeneration
        for other in server.contexts where other !== self && other.hub.queuedDeliveries.load(ordering: .relaxed) > 0 {
            gatesOutstanding += 1
            other.loop.execute { [unowned self] in
                other.afterShareWritten { [unowned self] in
                    self.loop.execute { self.gateArrived(generation: generation) }
                }
            }
        }
        guard gatesOutstanding > 0 else { return }
        gateTimer = loop.schedule(afterNanoseconds: Self.gateTimeoutNanoseconds) { [unowned self] in
            self.gateTimer = nil
            guard self.gateGeneration == generation else { return }
            self.gatesOutstanding = 0
        }
    }

    private func gateArrived(generation: UInt64) {
        guard generation == gateGeneration, gatesOutstanding > 0 else { return }
        gatesOutstanding -= 1
    }

    /// Runs `action` once this loop has written an answer's share (`shareToWrite`) of the stream
    /// writes pending now: at once when none is. Another loop's answers wait for it (`answerGates`).
    func afterShareWritten(_ action: @escaping () -> Void) {
        whenSwept(to: sweptBase &+ UInt64(streamHead + shareToWrite()), action)
    }

    /// Runs `action` once the sweep has reached `position` (`runWriteWaiters`): at once when it has.
    private func whenSwept(to position: UInt64, _ action: @escaping () -> Void) {
        guard position > sweptBase &+ UInt64(streamHead) else { return action() }
        // Waiters stay in order of position: a share's may come before some whole-queue ones.
        var index = writeWaiters.count
        while index > 0, writeWaiters[index - 1].position > position { index -= 1 }
        writeWaiters.insert((position, action), at: index)
    }

    private func runWriteWaiters() {
        guard let first = writeWaiters.first else { return }
        let swept = sweptBase &+ UInt64(streamHead)
        guard first.position <= swept else { return }
        let due = writeWaiters.prefix { $0.position <= swept }
        writeWaiters.removeFirst(due.count)
        for waiter in due { waiter.action() }
    }

    /// Runs on the loop, before its first connection.
    func attach(server: HTTPServer) {
        self.server = server
        loop.onTurnEnd(leavingWork: { [unowned self] in self.flushPending() })
        hub.afterWritesHook = { [unowned self] action in self.afterQueuedWrites(action) }
    }

    var connectionCount: Int { connections.count }

    private var requestCounter: UInt64 = 0
    /// `r{instance tag in hex}{loop index}x`, the request ids' fixed part, made at the first one.
    private var requestIDPrefix: [UInt8] = []

    /// A request id unique in this process (`X-Request-Id` when the caller sent none):
    /// `r{instance tag in hex}{loop index}x{counter in base 36}`.
    func makeRequestID() -> String {
        requestCounter += 1
        if requestIDPrefix.isEmpty { requestIDPrefix = Array("r\(String(server.node.instanceTag, radix: 16))\(loop.index)x".utf8) }
        // Written as bytes: the interpolation and `String(_:radix:)` cost ~1,400 instructions a request.
        return Self.text(requestIDPrefix, base36: requestCounter)
    }

    /// `prefix` then `value`'s lowercase base-36 digits, as `String(value, radix: 36)` writes them.
    static func text(_ prefix: [UInt8], base36 value: UInt64) -> String {
        var digits = 1
        var rest = value / 36
        while rest > 0 {
            digits += 1
            rest /= 36
        }
        return String(unsafeUninitializedCapacity: prefix.count + digits) { out in
            for k in prefix.indices { out[k] = prefix[k] }
            var left = value
            var at = prefix.count + digits
            repeat {
                at -= 1
                let digit = UInt8(truncatingIfNeeded: left % 36)
                out[at] = digit < 10 ? digit + 0x30 : digit + 0x57   // 0-9, then a-z
                left /= 36
            } while left > 0
            return prefix.count + digits
        }
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
        connection.registryIndex = Int32(connections.count)
        connections.append(connection)
        metrics.connectionsAccepted &+= 1
    }

    func forget(_ connection: HTTPConnection) {
        let index = Int(connection.registryIndex)
        guard index >= 0, index < connections.count, connections[index] === connection else { return }
        let last = connections.removeLast()
        if index < connections.count {
            connections[index] = last
            last.registryIndex = Int32(index)
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
    func endApp(_ app: String, reason: AppStreamEnd) {
        for connection in connections { connection.endApp(app, reason: reason) }
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
