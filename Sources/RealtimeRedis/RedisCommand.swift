import Digests
import HeraldCore

/// A Lua script with its SHA-1, run with `EVALSHA` and, when the server's script cache is empty
/// (`NOSCRIPT` after a restart or `SCRIPT FLUSH`), once more with `EVAL`.
public struct RedisScript: Sendable {
    public let source: String
    /// Lower-case hex SHA-1 of `source`, the name `EVALSHA` takes.
    public let sha1: String

    public init(_ source: String) {
        self.source = source
        // OpenSSL's low-level SHA-1 (`Digests`): no provider initialisation.
        sha1 = SHA1.hash(Array(source.utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// One command's arguments (binary-safe), or a script call that falls back to `EVAL`.
public struct RedisCommand: Sendable {
    public let arguments: [[UInt8]]
    /// Set for `EVALSHA`: the script to send with `EVAL` on `NOSCRIPT`.
    public let script: RedisScript?

    public init(_ arguments: [[UInt8]]) {
        self.arguments = arguments
        script = nil
    }

    public init(_ arguments: String...) {
        self.init(arguments.map { Array($0.utf8) })
    }

    /// `EVALSHA sha numkeys keys… args…`.
    public init(script: RedisScript, keys: [String], arguments: [[UInt8]]) {
        var all: [[UInt8]] = [Array("EVALSHA".utf8), Array(script.sha1.utf8), Array(String(keys.count).utf8)]
        all.append(contentsOf: keys.map { Array($0.utf8) })
        all.append(contentsOf: arguments)
        self.arguments = all
        self.script = script
    }

    /// The same call as `EVAL source …`.
    var evalForm: [[UInt8]] {
        guard let script else { return arguments }
        return [Array("EVAL".utf8), Array(script.source.utf8)] + arguments.dropFirst(2)
    }
}
