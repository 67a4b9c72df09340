/// Why a Redis call failed (RealtimeRedis's own errors; the broker maps them to `BrokerError`).
public enum RedisError: Error, Equatable, Sendable {
    /// Could not connect (refused, unreachable, connect timeout); the text is hiredis's reason.
    case connectFailed(String)
    /// The connection broke while a command was in flight (reset, EOF); the text says which.
    case connectionLost(String)
    /// No answer within the caller's bound; the command may still run on the server.
    case timedOut
    /// Not connected, and the reconnect backoff has not elapsed yet.
    case backingOff
    /// Redis answered with an error reply (e.g. `WRONGTYPE`, a Lua error).
    case server(String)
    /// A reply whose shape the caller did not expect (a bug or a foreign key layout).
    case unexpectedReply(String)
    /// The client was shut down.
    case closed
    /// Redis answered `SELECT` of the endpoint's database with an error (`ERR DB index is out of
    /// range`: its `databases` setting has fewer): no connection to that database can ever be made.
    case databaseRefused(database: Int, reason: String)
}

extension RedisError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .connectFailed(let reason): "RedisError.connectFailed: \(reason)"
        case .connectionLost(let reason): "RedisError.connectionLost: \(reason)"
        case .timedOut: "RedisError.timedOut"
        case .backingOff: "RedisError.backingOff"
        case .server(let message): "RedisError.server: \(message)"
        case .unexpectedReply(let what): "RedisError.unexpectedReply: \(what)"
        case .closed: "RedisError.closed"
        case .databaseRefused(let database, let reason): "RedisError.databaseRefused: SELECT \(database): \(reason)"
        }
    }
}
