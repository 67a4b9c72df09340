import Dispatch
import Foundation
import Glibc
import LoopbackSockets
@testable import RealtimeRedis

/// A `redis-server` of the test's own on a free loopback port, without persistence, in a temp
/// directory; stopped by its recorded PID (never by name). `restart()` stops it and starts a new
/// one on the same port: Redis comes back empty, as after a crash without persistence.
final class RedisServerProcess: @unchecked Sendable {
    /// Where the binary is; nil when redis-server is not installed (the tests are then skipped:
    /// `scripts/bootstrap --test` installs it).
    static let binary: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin", "/usr/sbin"] {
            let candidate = "\(directory)/redis-server"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    static var isInstalled: Bool { binary != nil }

    private static let launchLock = NSLock()

    struct StartFailure: Error, CustomStringConvertible { let description: String }

    let port: Int32
    let directory: URL
    // Guarded by the test that owns the server (one test at a time touches it).
    private var process: Process?

    var endpoint: RedisEndpoint { RedisEndpoint(host: "127.0.0.1", port: port) }

    init() throws {
        guard Self.binary != nil else { throw StartFailure(description: "redis-server is not installed (scripts/bootstrap --test)") }
        port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary!)
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", directory.path, "--loglevel", "warning"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        // Foundation's Process.run is not safe to call from several threads at once.
        Self.launchLock.lock()
        defer { Self.launchLock.unlock() }
        try process.run()
        self.process = process
        // Ready when it answers PING; there is no event to wait on short of parsing its log.
        let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            if let connection = try? RedisConnection(endpoint, connectTimeoutMilliseconds: 200, readTimeoutMilliseconds: 1_000),
               (try? connection.command([Array("PING".utf8)])) == .status("PONG") {
                return
            }
            usleep(20_000)
        }
        stop()
        throw StartFailure(description: "redis-server did not answer on port \(port)")
    }

    /// SIGKILL to the recorded PID, then reaps it.
    func stop() {
        guard let process else { return }
        self.process = nil
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// SIGSTOP: the server keeps its connections and reads nothing until `resume()`, as a Redis
    /// host that froze (a stalled VM, a full swap) does.
    func pause() {
        if let process, process.isRunning { kill(process.processIdentifier, SIGSTOP) }
    }

    /// SIGCONT after `pause()`: the server runs what it was sent meanwhile.
    func resume() {
        if let process, process.isRunning { kill(process.processIdentifier, SIGCONT) }
    }

    func restart() throws {
        stop()
        try start()
    }

    /// One command on a fresh connection (test set-up and inspection).
    func command(_ arguments: String...) throws -> RedisReply {
        let connection = try RedisConnection(endpoint, connectTimeoutMilliseconds: 1_000, readTimeoutMilliseconds: 2_000)
        return try connection.command(arguments.map { Array($0.utf8) })
    }

    private static func freePort() throws -> Int32 {
        guard let port = LoopbackSocket.freePort() else { throw StartFailure(description: "no free loopback port") }
        return Int32(port)
    }
}
