import HeraldCore
import Realtime

/// Runs a route's storage work off the event loop (one unit of work on the `Storage` port: the
/// writer, or a reader) and hands the response back to the loop (DESIGN: "database calls never
/// run on an event loop").
struct DatabaseResponder: Sendable {
    let database: any Storage

    /// A write unit of work (one transaction).
    func write(_ body: @escaping @Sendable (any StorageTransaction) throws -> HTTPResponse) -> RouteResult {
        .deferred { writer in
            database.write(body) { result in writer.complete(Self.response(result)) }
        }
    }

    /// A read unit of work (one snapshot).
    func read(_ body: @escaping @Sendable (any StorageTransaction) throws -> HTTPResponse) -> RouteResult {
        .deferred { writer in
            database.read(body) { result in writer.complete(Self.response(result)) }
        }
    }

    /// Errors become the one JSON error shape. Storage errors by their meaning: busy → 503
    /// `database_busy`; unavailable or closed → 503 `database_unavailable`; disk full → 507
    /// `database_full` (each logged); a failure nobody expected is logged and a 500.
    static func response(_ result: Result<HTTPResponse, any Error>) -> HTTPResponse {
        switch result {
        case .success(let response):
            return response
        case .failure(let error as HTTPResponseError):
            return error.response
        case .failure(StorageError.busy):
            return .error(503, code: "database_busy", message: "the database is busy; retry shortly")
        case .failure(let error as StorageError) where error.isUnavailable:
            Log.error("database request failed", ["error": "\(error)"])
            return .error(503, code: "database_unavailable", message: "the database is unavailable; retry later")
        case .failure(StorageError.diskFull(let message)):
            Log.error("database request failed", ["error": "\(StorageError.diskFull(message: message))"])
            return .error(507, code: "database_full", message: "the database has no space left for this write")
        case .failure(let error):
            Log.error("database request failed", ["error": "\(error)"])
            return .error(500, code: "internal_error", message: "internal error")
        }
    }
}

extension StorageError {
    /// The storage cannot serve now but may later: `.unavailable` or `.closed` (shutting down).
    fileprivate var isUnavailable: Bool {
        switch self {
        case .unavailable, .closed: true
        default: false
        }
    }
}
