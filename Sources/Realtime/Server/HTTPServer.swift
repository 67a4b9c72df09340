import CLinux
import Dispatch
import Glibc
import HeraldCore
import Synchronization

/// The HTTP/1.1 server: one listening socket watched by every event loop (`EPOLLEXCLUSIVE`, so a
/// new connection wakes one loop), connections served on the loop that accepted them, routes from
/// a `Router`, streams fed by the node's hub. One socket rather than `SO_REUSEPORT` listeners:
/// with those, a second Herald started on the same port by mistake would silently take half the
/// connections instead of failing with "address in use".
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    public let node: RealtimeNode
    let router: Router
    let contexts: [LoopContext]
    let perIP: ConnectionCounter
    let perUser: ConnectionCounter
    private let boundPort = Atomic<Int>(0)
    /// Round-robin position for handing accepted connections to loops.
    private let nextLoop = Atomic<Int>(0)
    private let listeningFD = Atomic<Int32>(-1)
    /// One `out of file descriptors` line per 30 s for the whole server, with `repeated`: every
    /// loop's listener meets the exhaustion every 100 ms while it lasts (a flood of idle
    /// connections), which logged 20 lines a second.
    let descriptorExhaustionLog = Mutex(LogThrottle())

    /// - Parameters:
    ///   - configuration: address, limits and timeouts.
    ///   - router: the routes (API target).
    ///   - node: loops, hubs and broker.
    public init(configuration: HTTPServerConfiguration, router: Router, node: RealtimeNode) {
        self.configuration = configuration
        self.router = router
        self.node = node
        self.perIP = ConnectionCounter(limit: configuration.maxConnectionsPerIP)
        self.perUser = ConnectionCounter(limit: configuration.maxStreamsPerUser)
        self.contexts = node.hubs.map { LoopContext(hub: $0, configuration: configuration) }
    }

    /// The port actually listened on (useful with port 0); 0 before `start`.
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// Opens the listeners, starts the loops and begins accepting.
    ///
    /// - Returns: the bound port.
    /// - Throws: `ListenError` when an address is invalid or a port is taken.
    @discardableResult
    public func start() throws(ListenError) -> Int {
        let (fd, port) = try Socket.listen(host: configuration.host, port: configuration.port, reusePort: false)
        boundPort.store(port, ordering: .relaxed)
        listeningFD.store(fd, ordering: .relaxed)
        let contexts = self.contexts
        node.onSnapshot { [weak self] done in
            guard let self else { return done(ServerSnapshot()) }
            self.snapshot(done)
        }
        node.onEndSession { sid, app in
            for context in contexts { context.loop.execute { context.endSession(sid, app: app) } }
        }
        node.onEndApp { app, reason in
            for context in contexts { context.loop.execute { context.endApp(app, reason: reason) } }
        }
        signal(SIGPIPE, SIG_IGN)
        node.group.start()
        // Every loop is attached before any loop listens: a loop that accepts hands connections
        // to the others through their queues, and a queue runs in order, so a handed-over
        // connection never reaches a loop before its attach (it would find no server).
        let server = self
        for context in contexts {
            context.loop.execute { context.attach(server: server) }
        }
        for context in contexts {
            context.loop.execute {
                let listener = Listener(fd: fd, context: context)
                do {
                    try context.loop.register(fd: fd, events: EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue,
                                              edgeTriggered: false, handler: listener)
                    context.listener = listener
                } catch {
                    Log.error("cannot watch listening socket", ["error": "\(error)"])
                }
                context.loop.scheduleRepeating(everyNanoseconds: 1_000_000_000) { context.tick() }
            }
        }
        // History TTL, idle channels and stale sessions, once every few seconds, off the hot path.
        let node = self.node
        let first = contexts[0]
        first.loop.execute {
            first.loop.scheduleRepeating(everyNanoseconds: 5_000_000_000) { node.sweep() }
        }
        return port
    }

    /// Stops accepting, tells every stream to reconnect, and stops the loops.
    public func shutdown() {
        beginShutdown()
        node.group.stop()
    }

    /// The first half of a graceful stop (OP-5): stops accepting, tells every stream and
    /// WebSocket to reconnect, and closes idle keep-alive connections. Requests already being
    /// received or answered go on; their answers close the connection. The loops keep running
    /// until `finishShutdown`.
    public func beginShutdown() {
        for context in contexts {
            context.loop.execute { context.shutdown() }
        }
        let fd = listeningFD.exchange(-1, ordering: .relaxed)
        if fd >= 0 { close(fd) }
    }

    /// The second half: waits until no connection has a request in progress or an answer still
    /// queued (a deferred answer, e.g. a stored notification call, is written before its
    /// connection closes), at most `deadlineSeconds`, then stops the loops. Returns how many
    /// connections were still busy at the deadline (0: every answer went out). Blocks the caller;
    /// call it from the main thread, never from a loop.
    @discardableResult
    public func finishShutdown(deadlineSeconds: Double) -> Int {
        let until = DispatchTime.now() + .nanoseconds(Int(deadlineSeconds * 1e9))
        var busy = 0
        while true {
            busy = busyConnections()
            if busy == 0 || DispatchTime.now() >= until { break }
            usleep(10_000)   // shutdown only
        }
        node.group.stop()
        return busy
    }

    /// Connections on every loop with a request in progress or bytes still queued.
    private func busyConnections() -> Int {
        let total = Mutex(0)
        let group = DispatchGroup()
        for context in contexts {
            group.enter()
            context.loop.execute {
                let busy = context.busyConnectionCount()
                total.withLock { $0 += busy }
                group.leave()
            }
        }
        // A loop that does not answer within a second counts as busy rather than blocking the stop.
        if group.wait(timeout: .now() + 1) == .timedOut { return max(1, total.withLock { $0 }) }
        return total.withLock { $0 }
    }

    /// Asks every loop for its counters and sums them. `done` runs once, on the last loop to
    /// answer, or with what arrived when `timeoutNanoseconds` passes (a stuck loop shows as
    /// `loopsAnswering < loopCount`, which `/readyz` reports).
    public func snapshot(timeoutNanoseconds: UInt64 = 1_000_000_000, _ done: @escaping @Sendable (ServerSnapshot) -> Void) {
        let total = contexts.count
        let gathered = Mutex<(parts: [ServerSnapshot], finished: Bool)>(([], false))
        @Sendable func finish(force: Bool) {
            let result = gathered.withLock { state -> ServerSnapshot? in
                guard !state.finished, force || state.parts.count == total else { return nil }
                state.finished = true
                return state.parts.reduce(into: ServerSnapshot()) { sum, part in
                    for (k, v) in part.connections { sum.connections[k, default: 0] += v }
                    sum.connectionsAccepted += part.connectionsAccepted
                    sum.slowConsumerCuts += part.slowConsumerCuts
                    sum.messagesDelivered += part.messagesDelivered
                    sum.responses += part.responses
                    sum.loopsAnswering += part.loopsAnswering
                }
            }
            if var result {
                result.loopCount = total
                done(result)
            }
        }
        for context in contexts {
            context.loop.execute {
                let part = context.snapshot()
                gathered.withLock { $0.parts.append(part) }
                finish(force: false)
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(timeoutNanoseconds))) { finish(force: true) }
    }

    /// Open connections per loop (runs on each loop; for metrics and tests).
    public func connectionCounts(_ done: @escaping @Sendable ([Int]) -> Void) {
        let results = Mutex<[Int?]>(Array(repeating: nil, count: contexts.count))
        for (i, context) in contexts.enumerated() {
            context.loop.execute {
                let count = context.connectionCount
                let all = results.withLock { r -> [Int]? in
                    r[i] = count
                    return r.allSatisfy { $0 != nil } ? r.map { $0! } : nil
                }
                if let all { done(all) }
            }
        }
    }
}

extension HTTPServer {
    /// The loop context that serves the next accepted connection: the loops in turn. The loop
    /// that accepts is whichever epoll woke, and it takes a whole batch; a backend's keep-alive
    /// connections, opened together, would otherwise all land on one loop and its publishes on
    /// one core (issue 8).
    func contextForNextConnection() -> LoopContext {
        let count = contexts.count
        if count == 1 { return contexts[0] }
        return contexts[nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue % count]
    }
}

/// Counts connections per key (IP address, user) across loops (RT-9 limits).
final class ConnectionCounter: Sendable {
    private let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) { self.limit = limit }

    /// Takes a slot for `address`; false when the address is at its limit.
    func acquire(_ address: String) -> Bool {
        guard limit > 0 else { return true }
        return counts.withLock { counts in
            let current = counts[address, default: 0]
            if current >= limit { return false }
            counts[address] = current + 1
            return true
        }
    }

    func release(_ address: String) {
        guard limit > 0 else { return }
        counts.withLock { counts in
            let current = counts[address, default: 0]
            counts[address] = current > 1 ? current - 1 : nil
        }
    }
}

/// Accepts connections on one loop's listening socket.
final class Listener: EventLoopHandler {
    let fd: Int32
    unowned let context: LoopContext
    private var retryScheduled = false
    /// Set on each accepted connection (`HERALD_DEAD_PEER_HEARTBEATS`), made once.
    private let deadPeerTimeout: DeadPeerTimeout?
    private var warnedDeadPeerTimeout = false

    init(fd: Int32, context: LoopContext) {
        self.fd = fd
        self.context = context
        deadPeerTimeout = context.configuration.deadPeerTimeout
    }

    func handleEvents(_ events: UInt32) { acceptAll() }

    /// Accepts a batch; the level-triggered listener wakes a loop again while more wait, which
    /// spreads a burst over the loops instead of one loop taking it all.
    func acceptAll() {
        var accepted = 0
        while !context.isShuttingDown, accepted < 64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) { ptr in
                ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(fd, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
            if client >= 0 {
                var one: Int32 = 1
                setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                if let deadPeerTimeout {
                    // A vanished client's stream must not outlive it by TCP's ~15 min of retries.
                    do { try deadPeerTimeout.apply(to: client) } catch {
                        // The connection works without it; said once per listener, not per accept.
                        if !warnedDeadPeerTimeout {
                            warnedDeadPeerTimeout = true
                            Log.warning("accept: dead-peer timeout not set; a vanished client is noticed only by TCP's own retries",
                                        ["error": "\(error)"])
                        }
                    }
                }
                let address = Socket.address(of: storage)
                let target = context.server.contextForNextConnection()
                if target === context {
                    context.adopt(fd: client, address: address)
                } else {
                    target.loop.execute { target.adoptHandedOver(fd: client, address: address) }
                }
                accepted += 1
                continue
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO:
                continue
            case EAGAIN, EWOULDBLOCK:
                return
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors: the pending connection stays queued and would wake us again at
                // once; back off instead of spinning.
                if !retryScheduled {
                    retryScheduled = true
                    let code = errno
                    let now = DispatchTime.now().uptimeNanoseconds
                    if let held = context.server.descriptorExhaustionLog.withLock({ $0.admit(now: now) }) {
                        let message = "accept: out of file descriptors; pausing accepts for 100 ms (logged at most once per 30 s)"
                        if held > 0 {
                            Log.warning(message, ["errno": "\(code)", "repeated": String(held)])
                        } else {
                            Log.warning(message, ["errno": "\(code)"])
                        }
                    }
                    context.loop.deregister(fd: fd)
                    context.loop.schedule(afterNanoseconds: 100_000_000) { [weak self] in
                        guard let self, !self.context.isShuttingDown else { return }
                        self.retryScheduled = false
                        try? self.context.loop.register(fd: self.fd, events: EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue,
                                                        edgeTriggered: false, handler: self)
                    }
                }
                return
            default:
                Log.error("accept failed", ["errno": "\(errno)"])
                return
            }
        }
    }
}
