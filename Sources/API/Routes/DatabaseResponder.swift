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

    // Every call fails alike while storage is down (a stopped server, a full disk).
    private static let failureLog = ThrottledErrorLog("database request failed")

    /// The `error` codes of a 503 for storage that cannot take a request now.
    static let unavailableCodes = ["storage_busy", "storage_read_only", "storage_unavailable"]

    /// Errors become the one JSON error shape. Storage errors by their meaning (RL-2), the same
    /// on every route: busy → 503 `storage_busy`; read-only → 503 `storage_read_only`;
    /// unavailable or closed → 503 `storage_unavailable`; disk full → 507 `storage_full` (each
    /// logged but busy); a failure nobody expected is logged and a 500.
    static func response(_ result: Result<HTTPResponse, any Error>) -> HTTPResponse {
        switch result {
        case .success(let response):
            return response
        case .failure(let error as HTTPResponseError):
            return error.response
        case .failure(let error as StorageError):
            return storageResponse(error)
        case .failure(let error):
            Log.error("database request failed", ["error": "\(error)"])
            return .error(500, code: "internal_error", message: "internal error")
        }
    }

    /// A storage failure as its answer; see `response`.
    static func storageResponse(_ error: StorageError) -> HTTPResponse {
        switch error {
        case .busy:
            return .error(503, code: "storage_busy", message: "the database stayed locked past its busy timeout; retry shortly")
        case .readOnly:
            failureLog.write(error)
            return .error(503, code: "storage_read_only", message: "the database is read-only; nothing was stored")
        case .stalled:
            failureLog.write(error)
            // The unit may still be queued or running: its outcome is unknown (operations.md, Database).
            return .error(503, code: "storage_unavailable",
                          message: "the database did not answer in time; a write may still complete: retry with the same idempotency_key")
        case .unavailable, .closed:
            failureLog.write(error)
            return .error(503, code: "storage_unavailable", message: "the database is unavailable; retry later")
        case .diskFull:
            failureLog.write(error)
            return .error(507, code: "storage_full", message: "no space left for this write; nothing was stored")
        default:
            Log.error("database request failed", ["error": "\(error)"])
            return .error(500, code: "internal_error", message: "internal error")
        }
    }
}
