/// One Redis reply (RESP2, what hiredis 0.14 speaks), copied out of hiredis's reply object so it
/// outlives the C reply and can cross threads.
public enum RedisReply: Sendable, Equatable {
    /// A bulk string, raw bytes (Redis strings are binary).
    case string([UInt8])
    /// A status line such as `OK` or `QUEUED`.
    case status(String)
    case integer(Int64)
    case array([RedisReply])
    /// A nil bulk string or nil array (a missing key, a Lua `false`).
    case null
    /// An error reply, e.g. `NOSCRIPT No matching script…`, `WRONGTYPE …`.
    case error(String)

    /// The bulk string or status as UTF-8 text; nil for anything else.
    public var text: String? {
        switch self {
        case .string(let bytes): String(decoding: bytes, as: UTF8.self)
        case .status(let status): status
        default: nil
        }
    }

    /// An integer reply, or a bulk string holding a decimal integer (what Lua and HGET return).
    public var int64: Int64? {
        switch self {
        case .integer(let value): value
        case .string: text.flatMap { Int64($0) }
        default: nil
        }
    }

    /// The elements of an array reply; nil for anything else.
    public var elements: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public var isNull: Bool { self == .null }
}
