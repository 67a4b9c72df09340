import Dispatch
import Foundation
import Glibc
import Synchronization

/// The node's pub/sub connection on a dedicated thread: SUBSCRIBE per channel (never PSUBSCRIBE:
/// a pattern makes every node receive every publish), UNSUBSCRIBE when the node no longer wants
/// it, and after a lost connection a new one that subscribes everything again.
///
/// Confirmation matters: a subscriber reads history only after Redis confirmed its SUBSCRIBE, or
/// a message published in between would be in neither. `waitUntilSubscribed` waits for that.
/// Each channel counts the SUBSCRIBE/UNSUBSCRIBE commands it has in flight, so an unsubscribe
/// quickly followed by a subscribe is confirmed only by the last answer, not the first.
///
/// Liveness: the thread polls the socket (and a wake-up pipe) itself instead of using a socket
/// read timeout, which would leave hiredis's context dead. A `PING` after 5 s of silence must be
/// answered within 5 s more, or the connection is replaced.
///
/// # Thread safety
/// `state` is guarded by its mutex; the connection is owned by the thread. Handlers run on the
/// thread, in the order Redis sent the messages.
final class RedisSubscriber: Sendable {
    /// Published messages, in the order Redis sent them: each one's Redis channel and payload,
    /// raw. Everything one read brought is handed over in one call (a node's loops then get one
    /// task per read, not one per message).
    typealias MessageHandler = @Sendable (_ messages: [(channel: String, payload: [UInt8])]) -> Void
    /// Every wanted channel is confirmed on a new connection; `reconnected` is false for the first.
    typealias ReadyHandler = @Sendable (_ reconnected: Bool) -> Void

    private struct Entry {
        var desired = false
        /// SUBSCRIBE/UNSUBSCRIBE commands sent on this connection and not yet answered.
        var pending = 0
        var confirmed = false
    }

    private struct Waiter {
        let names: [String]
        let done: DispatchSemaphore
    }

    private struct State: ~Copyable {
        var entries: [String: Entry] = [:]
        var outbox: [(subscribe: Bool, names: [String])] = []
        var waiters: [Waiter] = []
        var connected = false
        var closed = false
        /// Set on a new connection until every wanted channel is confirmed again.
        var resyncing = false
        var everConnected = false
    }

    private let endpoint: RedisEndpoint
    private let options: RedisClientOptions
    private let state = Mutex(State())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let handlers = Mutex<(message: MessageHandler, ready: ReadyHandler)?>(nil)
    /// Messages received and their payload bytes (the capacity model's cost per delivery).
    private let received = Atomic<UInt64>(0)
    private let receivedBytes = Atomic<UInt64>(0)
    /// Channels per SUBSCRIBE command when many are sent at once.
    static let batchSize = 512

    init(endpoint: RedisEndpoint, options: RedisClientOptions) {
        self.endpoint = endpoint
        self.options = options
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0, "pipe failed")
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    /// Starts the thread (once); the handlers run on it.
    func start(onMessage: @escaping MessageHandler, onReady: @escaping ReadyHandler) {
        handlers.withLock { $0 = (onMessage, onReady) }
        let thread = Thread { [self] in run() }
        thread.name = "herald.redis.subscriber"
        thread.start()
    }

    /// Wants `names`; sends SUBSCRIBE for those not wanted yet.
    func subscribe(_ names: [String]) {
        update(names, subscribe: true)
    }

    /// No longer wants `names`; sends UNSUBSCRIBE for those that were wanted.
    func unsubscribe(_ names: [String]) {
        update(names, subscribe: false)
    }

    private func update(_ names: [String], subscribe: Bool) {
        let send = state.withLock { state -> Bool in
            var changed: [String] = []
            for name in names {
                var entry = state.entries[name] ?? Entry()
                guard entry.desired != subscribe else { continue }
                entry.desired = subscribe
                entry.confirmed = false
                if state.connected { entry.pending += 1 }
                state.entries[name] = entry.desired || entry.pending > 0 ? entry : nil
                changed.append(name)
            }
            // A peak's buckets go back once it has passed (issue 17, Benchmarks/peak.py).
            state.entries.shrinkIfSparse()
            guard state.connected, !changed.isEmpty else { return false }
            state.outbox.append((subscribe, changed))
            return true
        }
        if send { wakeThread() }
    }

    /// Waits until Redis confirmed the subscription of every name (each must be wanted).
    /// - Throws: `.timedOut` after `timeoutMilliseconds`; `.closed` after shutdown.
    func waitUntilSubscribed(_ names: [String], timeoutMilliseconds: Int) throws(RedisError) {
        let done = DispatchSemaphore(value: 0)
        let ready = state.withLock { state -> Bool? in
            if state.closed { return nil }
            if names.allSatisfy({ state.entries[$0]?.confirmed == true }) { return true }
            state.waiters.append(Waiter(names: names, done: done))
            return false
        }
        guard let ready else { throw .closed }
        if ready { return }
        if done.wait(timeout: .now() + .milliseconds(timeoutMilliseconds)) == .success { return }
        state.withLock { state in state.waiters.removeAll { $0.done === done } }
        throw .timedOut
    }

    /// Pub/sub messages received since start, and their payload bytes.
    var messagesReceived: (count: UInt64, bytes: UInt64) {
        (received.load(ordering: .relaxed), receivedBytes.load(ordering: .relaxed))
    }

    /// Channels wanted now (tests, the position check).
    var wanted: [String] {
        state.withLock { state in state.entries.filter { $0.value.desired }.map(\.key) }
    }

    /// Ends the thread and closes the connection.
    func shutdown() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wakeThread()
        _ = finished.wait(timeout: .now() + .milliseconds(options.connectTimeoutMilliseconds + 1_500))
    }

    private func wakeThread() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: The thread

    private func run() {
        var backoff = Backoff(initialMilliseconds: options.initialBackoffMilliseconds, maximumMilliseconds: options.maximumBackoffMilliseconds)
        defer {
            close(wakeRead)
            close(wakeWrite)
            finished.signal()
        }
        while !state.withLock({ $0.closed }) {
            let connection: RedisConnection
            do {
                connection = try RedisConnection(endpoint, connectTimeoutMilliseconds: options.connectTimeoutMilliseconds, readTimeoutMilliseconds: nil)
            } catch {
                pause(milliseconds: backoff.failed())
                continue
            }
            backoff.succeeded()
            serve(connection)
            disconnected()
        }
    }

    /// Sleeps, or less when woken for shutdown.
    private func pause(milliseconds: Int) {
        var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(milliseconds))
        drainWakePipe()
    }

    private func drainWakePipe() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
    }

    /// Runs one connection until it fails or the subscriber shuts down.
    private func serve(_ connection: RedisConnection) {
        // Everything wanted is subscribed again on this connection, counted as in flight.
        let everything = state.withLock { state -> [String] in
            state.connected = true
            state.outbox.removeAll()
            var names: [String] = []
            for (name, var entry) in state.entries {
                entry.pending = entry.desired ? 1 : 0
                entry.confirmed = false
                if entry.desired { names.append(name) }
                state.entries[name] = entry.desired ? entry : nil
            }
            state.resyncing = true
            return names
        }
        var lastHeard = DispatchTime.now().uptimeNanoseconds
        var pingSent = false
        do {
            for start in stride(from: 0, to: everything.count, by: Self.batchSize) {
                let batch = everything[start..<min(start + Self.batchSize, everything.count)]
                try connection.append([Array("SUBSCRIBE".utf8)] + batch.map { Array($0.utf8) })
            }
            try connection.flush()
            try finishResyncIfDone()
            while true {
                let (outbox, closed) = state.withLock { state in
                    defer { state.outbox.removeAll() }
                    return (state.outbox, state.closed)
                }
                if closed { return }
                for operation in outbox {
                    for start in stride(from: 0, to: operation.names.count, by: Self.batchSize) {
                        let batch = operation.names[start..<min(start + Self.batchSize, operation.names.count)]
                        try connection.append([Array((operation.subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE").utf8)] + batch.map { Array($0.utf8) })
                    }
                }
                if !outbox.isEmpty { try connection.flush() }
                var descriptors = [pollfd(fd: connection.fileDescriptor, events: Int16(POLLIN), revents: 0),
                                   pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&descriptors, 2, 1_000)
                if ready < 0, errno != EINTR { throw RedisError.connectionLost("poll: errno \(errno)") }
                if descriptors[1].revents != 0 { drainWakePipe() }
                let now = DispatchTime.now().uptimeNanoseconds
                if descriptors[0].revents != 0 {
                    try connection.readAvailable()
                    lastHeard = now
                    pingSent = false
                    var batch: [(channel: String, payload: [UInt8])] = []
                    while let reply = try connection.bufferedReply() { try handle(reply, batch: &batch) }
                    hand(&batch)
                } else if now &- lastHeard > 5_000_000_000 {
                    if !pingSent {
                        // PING is allowed on a subscribed connection (RESP2 answers ["pong", ""]).
                        try connection.append([Array("PING".utf8)])
                        try connection.flush()
                        pingSent = true
                    } else if now &- lastHeard > 10_000_000_000 {
                        throw RedisError.connectionLost("no answer to PING")
                    }
                }
            }
        } catch {
            return
        }
    }

    /// Hands the messages collected so far to the handler.
    private func hand(_ batch: inout [(channel: String, payload: [UInt8])]) {
        guard !batch.isEmpty else { return }
        handlers.withLock { $0 }?.message(batch)
        batch.removeAll()
    }

    private func handle(_ reply: RedisReply, batch: inout [(channel: String, payload: [UInt8])]) throws(RedisError) {
        guard let parts = reply.elements, parts.count >= 2, let kind = parts[0].text else { return }
        switch kind {
        case "message":
            guard parts.count == 3, let channel = parts[1].text, case .string(let payload) = parts[2] else { return }
            received.add(1, ordering: .relaxed)
            receivedBytes.add(UInt64(payload.count), ordering: .relaxed)
            batch.append((channel, payload))
        case "subscribe", "unsubscribe":
            // Messages before a confirmation go first: a waiter released by it reads history
            // that the node must not see overtaken by older live messages.
            hand(&batch)
            guard let channel = parts[1].text else { return }
            let released = state.withLock { state -> [DispatchSemaphore] in
                guard var entry = state.entries[channel] else { return [] }
                entry.pending = max(entry.pending - 1, 0)
                entry.confirmed = entry.desired && entry.pending == 0
                state.entries[channel] = entry.desired || entry.pending > 0 ? entry : nil
                state.entries.shrinkIfSparse()
                return releaseWaiters(&state)
            }
            for semaphore in released { semaphore.signal() }
            try finishResyncIfDone()
        default:
            break  // "pong"
        }
    }

    /// Waiters whose names are all confirmed, removed from the list.
    private func releaseWaiters(_ state: inout State) -> [DispatchSemaphore] {
        var released: [DispatchSemaphore] = []
        state.waiters.removeAll { waiter in
            guard waiter.names.allSatisfy({ state.entries[$0]?.confirmed == true }) else { return false }
            released.append(waiter.done)
            return true
        }
        return released
    }

    /// Calls `onReady` once a new connection has every wanted channel confirmed.
    private func finishResyncIfDone() throws(RedisError) {
        let reconnected = state.withLock { state -> Bool? in
            guard state.resyncing, state.entries.values.allSatisfy({ !$0.desired || $0.confirmed }) else { return nil }
            state.resyncing = false
            defer { state.everConnected = true }
            return state.everConnected
        }
        if let reconnected { handlers.withLock { $0 }?.ready(reconnected) }
    }

    private func disconnected() {
        state.withLock { state in
            state.connected = false
            state.resyncing = false
            state.outbox.removeAll()
            for (name, var entry) in state.entries {
                entry.pending = 0
                entry.confirmed = false
                state.entries[name] = entry.desired ? entry : nil
            }
        }
    }
}
