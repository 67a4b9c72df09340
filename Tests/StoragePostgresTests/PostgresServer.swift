import Foundation
import Glibc
import HeraldCore
@testable import StoragePostgres
import LoopbackSockets
import Synchronization

/// A PostgreSQL server the tests start themselves, on 127.0.0.1 with its data in a temporary
/// directory (docs: /work/shared/reference/cluster.md). PostgreSQL refuses to run as root, so
/// the data directory belongs to `postgres` and `initdb`/`pg_ctl` run through `runuser`. Stopped
/// by `pg_ctl stop` (and, failing that, by the PID the server recorded), never by name.
final class PostgresServer: Sendable {
    /// The binaries of the installed major version.
    static let binaries: String? = {
        let root = "/usr/lib/postgresql"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let versions = names.compactMap { name -> Int? in Int(name) }.sorted()
        for version in versions.reversed() {
            let directory = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: directory + "/initdb") { return directory }
        }
        return nil
    }()

    /// Why the PostgreSQL tests cannot run here, or nil when they can.
    static let unavailableReason: String? = {
        if binaries == nil { return "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; scripts/bootstrap --test installs it)" }
        if getuid() != 0 { return "the PostgreSQL tests start their server through runuser and must run as root" }
        if getpwnam("postgres") == nil { return "there is no postgres user" }
        return nil
    }()

    static var isAvailable: Bool { unavailableReason == nil }

    /// The server most tests share (each on a database of its own); started on first use and
    /// stopped when the test process exits.
    static let shared: PostgresServer? = {
        guard isAvailable, let server = try? PostgresServer() else { return nil }
        sharedForExit.withLock { $0 = server }
        atexit { PostgresServer.sharedForExit.withLock { $0 }?.destroy() }
        return server
    }()
    private static let sharedForExit = Mutex<PostgresServer?>(nil)

    let directory: String
    let port: Int
    private let databases = Atomic<Int>(0)

    /// Makes a cluster with `initdb` and starts it. - Throws: when a step fails.
    init() throws {
        guard let binaries = Self.binaries else { throw Failure("PostgreSQL is not installed") }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        chmod(base, 0o755)
        directory = base
        port = try Self.freePort()
        try Self.run("/usr/bin/install", ["-d", "-o", "postgres", "-m", "700", "\(base)/pg"])
        try Self.run("/usr/bin/install", ["-d", "-o", "postgres", "-m", "755", "\(base)/socket"])
        try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(binaries)/initdb", "-D", "\(base)/pg", "-U", "postgres",
                                           "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        try start()
    }

    /// `pg_ctl start`, waiting until it accepts connections.
    func start() throws {
        try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(Self.binaries!)/pg_ctl", "start", "-w", "-D", "\(directory)/pg",
                                           "-l", "\(directory)/socket/server.log",
                                           "-o", "-k \(directory)/socket -c listen_addresses=127.0.0.1 -p \(port) -c fsync=off -c max_connections=200"])
    }

    /// `pg_ctl stop -m fast`; the recorded postmaster PID is killed if that fails.
    func stop() {
        let pid = postmasterPID
        if (try? Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(Self.binaries!)/pg_ctl", "stop", "-w", "-m", "fast",
                                                  "-D", "\(directory)/pg"])) == nil, let pid {
            kill(pid, SIGKILL)
        }
    }

    /// Stops the server and removes its directory.
    func destroy() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The postmaster's PID, from `postmaster.pid` (its first line).
    var postmasterPID: pid_t? {
        guard let text = try? String(contentsOfFile: "\(directory)/pg/postmaster.pid", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    func url(database: String) -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)" }

    /// A new, empty database. - Returns: its URL.
    func makeDatabase() throws -> String {
        let name = "herald_test_\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        let connection = try PostgresConnection(conninfo: url(database: "postgres"), sessionSetup: "SELECT 1")
        defer { connection.close() }
        try connection.execute("CREATE DATABASE \(name)")
        return url(database: name)
    }

    /// A connection to a new database at the newest schema, for tests that read its statements'
    /// plans; the caller closes it.
    func migratedConnection() throws -> PostgresConnection {
        let connection = try PostgresConnection(conninfo: try makeDatabase(), sessionSetup: "SELECT 1")
        do {
            _ = try PostgresMigrator.migrate(connection)
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    // MARK: Helpers

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs a program to its end with posix_spawn and waitpid (Foundation's `Process` left a
    /// reaped-never child here when called from a static initializer), its output in a file.
    private static func run(_ executable: String, _ arguments: [String]) throws {
        // A file, not a pipe: the server pg_ctl starts inherits the descriptors and would keep a
        // pipe open for as long as it runs.
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-run-\(UUID().uuidString).log").path
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure("cannot start \(executable): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exited = (status & 0x7f) == 0, code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failure("\(executable) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
    }

    /// A TCP port free on 127.0.0.1 right now (the kernel's pick for port 0).
    private static func freePort() throws -> Int {
        guard let port = LoopbackSocket.freePort() else { throw Failure("no free port") }
        return port
    }
}

/// The adapters the storage contract runs on.
enum Engine: String, CustomStringConvertible, Sendable {
    case sqlite, postgres

    var description: String { rawValue }

    /// SQLite always; PostgreSQL when it can be started here.
    static let available: [Engine] = PostgresServer.isAvailable ? [.sqlite, .postgres] : [.sqlite]
}

extension PostgresConnection {
    /// `EXPLAIN (COSTS OFF)` of `sql` with `parameters`, its lines joined: what a plan test reads.
    func plan(of sql: String, _ parameters: [any PostgresBindable]) throws -> String {
        try query("EXPLAIN (COSTS OFF) " + sql, parameters).map { try $0.value("QUERY PLAN", as: String.self) }.joined(separator: "\n")
    }
}

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds`: for what another
/// process (the PostgreSQL server, a connector's backoff) decides, where there is no event to await.
/// - Returns: whether it held in time.
func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}
