import HeraldCore
import Realtime
import StorageSQLite

/// Runs a route's database work off the event loop (on the `Database` writer or a reader) and
/// hands the response back to the loop (DESIGN: "database calls never run on an event loop").
struct DatabaseResponder: Sendable {
    let database: Database

    /// Work on the writer connection.
    func write(_ body: @escaping @Sendable (SQLiteConnection) throws -> HTTPResponse) -> RouteResult {
        .deferred { writer in
            database.write(body) { result in writer.complete(Self.response(result)) }
        }
    }

    /// Work on a reader connection.
    func read(_ body: @escaping @Sendable (SQLiteConnection) throws -> HTTPResponse) -> RouteResult {
        .deferred { writer in
            database.read(body) { result in writer.complete(Self.response(result)) }
        }
    }

    /// Errors become the one JSON error shape; a failure nobody expected is logged and a 500.
    static func response(_ result: Result<HTTPResponse, any Error>) -> HTTPResponse {
        switch result {
        case .success(let response):
            return response
        case .failure(let error as HTTPResponseError):
            return error.response
        case .failure(StorageError.busy):
            return .error(503, code: "database_busy", message: "the database is busy; retry shortly")
        case .failure(let error):
            Log.error("database request failed", ["error": "\(error)"])
            return .error(500, code: "internal_error", message: "internal error")
        }
    }
}
