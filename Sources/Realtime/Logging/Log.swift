import Foundation
import HeraldCore
import Synchronization

/// Severity, lowest first (`HERALD_LOG_LEVEL`).
public enum LogLevel: Int, Comparable, Sendable, CaseIterable {
    case debug, info, warning, error

    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warning", "warn": self = .warning
        case "error": self = .error
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .warning: return "warning"
        case .error: return "error"
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Line format (`HERALD_LOG_FORMAT`): one JSON object per line, or logfmt-style text (OP-4).
public enum LogFormat: String, Sendable {
    case json, text
}

/// Process-wide structured logging to standard error. Configure once at start with
/// `Log.bootstrap`; callers pass metadata as string pairs, never secrets or whole tokens.
public enum Log {
    private struct Settings {
        var level: LogLevel = .info
        var format: LogFormat = .json
    }

    private static let settings = Mutex(Settings())

    /// Sets level and format; call before the loops start.
    public static func bootstrap(level: LogLevel, format: LogFormat) {
        settings.withLock { $0 = Settings(level: level, format: format) }
    }

    public static func debug(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { write(.debug, message, metadata) }
    public static func info(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { write(.info, message, metadata) }
    public static func warning(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { write(.warning, message, metadata) }
    public static func error(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { write(.error, message, metadata) }

    /// A line whose metadata is built at run time (bridged from other modules' logs).
    public static func log(_ level: LogLevel, _ message: String, metadata: [(String, String)]) {
        write(level, message, metadata)
    }

    /// True when `level` would be written (skip building expensive metadata otherwise).
    public static func enabled(_ level: LogLevel) -> Bool { settings.withLock { $0.level } <= level }

    private static func write(_ level: LogLevel, _ message: String, _ metadata: KeyValuePairs<String, String>) {
        write(level, message, metadata.map { ($0.key, $0.value) })
    }

    /// `unixMilliseconds` as the lines' `ts`: RFC 3339 in UTC with milliseconds,
    /// `2026-12-02T02:23:07.723Z`, what Foundation's ISO 8601 style wrote before. Formatted from
    /// `gmtime_r`: that style builds a Gregorian calendar and asks ICU for the current time zone,
    /// which loaded ICU's zone data and calendar code into every process at its first log line
    /// (issue 17, idle footprint).
    static func timestamp(unixMilliseconds: Int64) -> String {
        var seconds = time_t(unixMilliseconds.floorDivided(by: 1000))
        let milliseconds = Int(unixMilliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(milliseconds, 3)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Standard error, where every line goes; a line it refuses is dropped, not fatal (`LogSink`).
    static let sink = LogSink(descriptor: STDERR_FILENO)

    private static func write(_ level: LogLevel, _ message: String, _ metadata: [(String, String)]) {
        let current = settings.withLock { $0 }
        guard level >= current.level else { return }
        let line = format(level, message, metadata, as: current.format, at: now())
        sink.emit(line) { count, reason in
            format(.warning, "log lines dropped: standard error refused them", [("count", String(count)), ("error", reason)],
                   as: current.format, at: now())
        }
    }

    private static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000)
    }

    /// One line, newline included, in `format`, stamped `unixMilliseconds`.
    static func format(_ level: LogLevel, _ message: String, _ metadata: [(String, String)], as format: LogFormat,
                       at unixMilliseconds: Int64) -> String {
        let time = timestamp(unixMilliseconds: unixMilliseconds)
        var line: String
        switch format {
        case .json:
            line = "{\"ts\":\(JSONText.quote(time)),\"level\":\"\(level.name)\",\"msg\":\(JSONText.quote(message))"
            for (key, value) in metadata { line += ",\(JSONText.quote(key)):\(JSONText.quote(value))" }
            line += "}\n"
        case .text:
            line = "\(time) \(level.name.uppercased()) \(message)"
            for (key, value) in metadata {
                let quoted = value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) ? JSONText.quote(value) : value
                line += " \(key)=\(quoted)"
            }
            line += "\n"
        }
        return line
    }
}

private extension Int64 {
    /// Division rounding toward minus infinity: a time before 1970 still has milliseconds 0–999.
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}
