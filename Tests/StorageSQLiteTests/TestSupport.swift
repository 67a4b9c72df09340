import Foundation
import HeraldCore
@testable import StorageSQLite
import Synchronization

/// Runs `body` with a fresh directory under the system temporary directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// Async variant of `withTemporaryDirectory`.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

private func makeTemporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("herald-storage-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

extension URL {
    /// `<directory>/<name>` as a file-system path.
    func databasePath(_ name: String = "test.db") -> String {
        appendingPathComponent(name).path
    }
}

/// A value shared between threads in a test.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func update(_ body: (inout Value) -> Void) { mutex.withLock { body(&$0) } }
    var value: Value { mutex.withLock { $0 } }
}

/// The count of rows in `table`.
func count(_ connection: SQLiteConnection, _ table: String) throws -> Int {
    try connection.queryOne("SELECT count(*) FROM \(table)")![0, as: Int.self]
}

/// Runs `body` with a private in-memory database at the newest schema.
func withMigratedDatabase(_ body: (SQLiteConnection) throws -> Void) throws {
    let connection = try SQLiteConnection(path: ":memory:")
    try Migrator.migrate(connection)
    try body(connection)
}
