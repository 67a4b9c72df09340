import Dispatch
import Foundation
import HeraldCore
import Synchronization

/// Timeouts and backoff of a Redis client (`HERALD_BROKER`'s adapters).
public struct RedisClientOptions: Sendable {
    /// Bound on one TCP connect.
    public var connectTimeoutMilliseconds: Int
    /// Bound on one reply on a command connection; a slower reply drops the connection.
    public var readTimeoutMilliseconds: Int
    /// How long a caller waits for its call (queueing included) before `.timedOut`.
    public var callTimeoutMilliseconds: Int
    /// First delay after a failed connect, doubled per failure up to `maximumBackoffMilliseconds`.
    public var initialBackoffMilliseconds: Int
    public var maximumBackoffMilliseconds: Int

    public init(connectTimeoutMilliseconds: Int = 500, readTimeoutMilliseconds: Int = 2_000, callTimeoutMilliseconds: Int = 1_000,
                initialBackoffMilliseconds: Int = 50, maximumBackoffMilliseconds: Int = 2_000) {
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.readTimeoutMilliseconds = readTimeoutMilliseconds
        self.callTimeoutMilliseconds = callTimeoutMilliseconds
        self.initialBackoffMilliseconds = initialBackoffMilliseconds
        self.maximumBackoffMilliseconds = maximumBackoffMilliseconds
    }
}

/// Reconnect delays: doubles per failure, capped, back to the start after a success.
struct Backoff {
    let initial: Int
    let maximum: Int
    private(set) var next: Int

    init(initialMilliseconds: Int, maximumMilliseconds: Int) {
        initial = max(initialMilliseconds, 1)
        maximum = max(maximumMilliseconds, initial)
        next = initial
    }

    /// The delay to wait after this failure (ms).
    mutating func failed() -> Int {
        defer { next = min(next * 2, maximum) }
        return next
    }

    mutating func succeeded() { next = initial }
}

/// A command connection on a dedicated thread: callers from any thread (event loops included)
/// queue calls; the thread writes every queued call in one pipeline and hands each caller its
/// replies. Waits are bounded (`callTimeoutMilliseconds`), so a caller never blocks longer than
/// that, whatever Redis does.
///
/// # Failure
/// A broken connection fails the calls in flight (`.connectionLost`; they may or may not have run)
/// and is replaced on the next call. Connecting again backs off (50 ms doubling to 2 s by
/// default); while it backs off, calls fail at once with `.backingOff`. A connection idle for more
/// than a second is probed with `PING` first, so a Redis restart costs no caller an error.
///
/// # Thread safety
/// `queue` is guarded by its mutex; the connection is owned by the thread.
public final class RedisCommander: Sendable {
    private struct Job {
        let commands: [RedisCommand]
        let complete: @Sendable (Result<[RedisReply], RedisError>) -> Void
    }

    private struct Queue: ~Copyable {
        var jobs: [Job] = []
        var closed = false
    }

    public let endpoint: RedisEndpoint
    public let options: RedisClientOptions
    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Commands sent to Redis (metrics, benchmarks' per-publish cost).
    private let sent = Atomic<UInt64>(0)
    /// Argument bytes of those commands (RESP framing not counted).
    private let sentBytes = Atomic<UInt64>(0)

    /// Starts the thread; it connects on the first call.
    public init(endpoint: RedisEndpoint, options: RedisClientOptions = .init(), name: String = "herald.redis.command") {
        self.endpoint = endpoint
        self.options = options
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Commands written to Redis since start.
    public var commandsSent: UInt64 { sent.load(ordering: .relaxed) }

    /// Argument bytes of the commands sent (RESP framing not counted), for the capacity model.
    public var bytesSent: UInt64 { sentBytes.load(ordering: .relaxed) }

    /// Queues `commands` as one pipeline; `complete` runs on the client's thread with one reply
    /// per command (error replies included), or the error that failed them all.
    public func submit(_ commands: [RedisCommand], complete: @escaping @Sendable (Result<[RedisReply], RedisError>) -> Void) {
        let accepted = queue.withLock { queue -> Bool in
            guard !queue.closed else { return false }
            queue.jobs.append(Job(commands: commands, complete: complete))
            return true
        }
        if accepted { wake.signal() } else { complete(.failure(.closed)) }
    }

    /// Runs `commands` and waits at most `timeoutMilliseconds` (default: the options' call timeout).
    /// - Returns: one reply per command, error replies included.
    /// - Throws: `RedisError` when the connection failed or the wait ran out (`.timedOut`; the
    ///   commands may still run).
    public func call(_ commands: [RedisCommand], timeoutMilliseconds: Int? = nil) throws(RedisError) -> [RedisReply] {
        let slot = Mutex<Result<[RedisReply], RedisError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(commands) { result in
            slot.withLock { $0 = result }
            done.signal()
        }
        let wait = timeoutMilliseconds ?? options.callTimeoutMilliseconds
        guard done.wait(timeout: .now() + .milliseconds(wait)) == .success else { throw .timedOut }
        switch slot.withLock({ $0 })! {
        case .success(let replies): return replies
        case .failure(let error): throw error
        }
    }

    /// One command; an error reply is thrown as `.server`.
    public func call(_ command: RedisCommand, timeoutMilliseconds: Int? = nil) throws(RedisError) -> RedisReply {
        let reply = try call([command], timeoutMilliseconds: timeoutMilliseconds)[0]
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    /// Fails queued calls with `.closed` and ends the thread (waits for it, bounded by the read
    /// timeout of a call in flight).
    public func shutdown() {
        let first = queue.withLock { queue -> Bool in
            defer { queue.closed = true }
            return !queue.closed
        }
        guard first else { return }
        wake.signal()
        _ = finished.wait(timeout: .now() + .milliseconds(options.readTimeoutMilliseconds + options.connectTimeoutMilliseconds + 500))
    }

    // MARK: The thread

    private func run() {
        var connection: RedisConnection?
        var backoff = Backoff(initialMilliseconds: options.initialBackoffMilliseconds, maximumMilliseconds: options.maximumBackoffMilliseconds)
        var retryAt: UInt64 = 0
        var lastUse: UInt64 = 0
        while true {
            wake.wait()
            let (jobs, closed) = queue.withLock { queue in
                defer { queue.jobs.removeAll() }
                return (queue.jobs, queue.closed)
            }
            if closed {
                for job in jobs { job.complete(.failure(.closed)) }
                finished.signal()
                return
            }
            guard !jobs.isEmpty else { continue }
            let now = DispatchTime.now().uptimeNanoseconds
            if let open = connection, now &- lastUse > 1_000_000_000 {
                // An idle connection may have died with its server: find out before it costs a call.
                if (try? open.command([Array("PING".utf8)])) == nil { connection = nil }
            }
            if connection == nil {
                guard now >= retryAt else {
                    for job in jobs { job.complete(.failure(.backingOff)) }
                    continue
                }
                do {
                    connection = try RedisConnection(endpoint, connectTimeoutMilliseconds: options.connectTimeoutMilliseconds,
                                                     readTimeoutMilliseconds: options.readTimeoutMilliseconds)
                    backoff.succeeded()
                } catch {
                    retryAt = DispatchTime.now().uptimeNanoseconds + UInt64(backoff.failed()) * 1_000_000
                    for job in jobs { job.complete(.failure(error)) }
                    continue
                }
            }
            lastUse = DispatchTime.now().uptimeNanoseconds
            execute(jobs, on: &connection)
        }
    }

    /// Writes every job's commands in one pipeline, reads the replies, runs `EVAL` for scripts
    /// the server did not know, and completes each job.
    private func execute(_ jobs: [Job], on connection: inout RedisConnection?) {
        guard let open = connection else { return }
        var replies: [RedisReply] = []
        do {
            let all = jobs.flatMap { $0.commands.map(\.arguments) }
            sent.add(UInt64(all.count), ordering: .relaxed)
            sentBytes.add(UInt64(all.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }), ordering: .relaxed)
            replies = try open.pipeline(all)
        } catch {
            connection = nil
            for job in jobs { job.complete(.failure(error)) }
            return
        }
        var index = 0
        for job in jobs {
            var results = Array(replies[index..<(index + job.commands.count)])
            index += job.commands.count
            do {
                for (position, command) in job.commands.enumerated() where command.script != nil {
                    if case .error(let message) = results[position], message.hasPrefix("NOSCRIPT") {
                        sent.add(1, ordering: .relaxed)
                        results[position] = try open.command(command.evalForm)
                    }
                }
            } catch {
                connection = nil
                job.complete(.failure(error))
                continue
            }
            job.complete(.success(results))
        }
    }
}
