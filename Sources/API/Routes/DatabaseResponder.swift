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
        case .failure(let error):
            return Self.error(error).response
        }
    }

    /// A failure of a unit of work as the error it is answered with, for an answer that is not an
    /// HTTP response (a WebSocket `error` frame, ADR 0026): the codes and messages of `response`.
    static func error(_ error: any Error) -> HTTPError {
        switch error {
        case let error as HTTPError:
            return error
        case let error as StorageError:
            return storageError(error)
        default:
            Log.error("database request failed", ["error": "\(error)"])
            return HTTPError(500, "internal_error", "internal error")
        }
    }

    /// A storage failure's status, code and message; see `response`.
    static func storageError(_ error: StorageError) -> HTTPError {
        switch error {
        case .busy:
            return HTTPError(503, "storage_busy", "the database stayed locked past its busy timeout; retry shortly")
        case .readOnly:
            failureLog.write(error)
            return HTTPError(503, "storage_read_only", "the database is read-only; nothing was stored")
        case .stalled:
            failureLog.write(error)
            // The unit may still be queued or running: its outcome is unknown (operations.md, Database).
            return HTTPError(503, "storage_unavailable", "the database did not answer in time; a write may still complete: retry with the same idempotency_key")
        case .unavailable, .closed:
            failureLog.write(error)
            return HTTPError(503, "storage_unavailable", "the database is unavailable; retry later")
        case .diskFull:
            failureLog.write(error)
            return HTTPError(507, "storage_full", "no space left for this write; nothing was stored")
        default:
            Log.error("database request failed", ["error": "\(error)"])
            return HTTPError(500, "internal_error", "internal error")
        }
    }
}
