import CLinux
import Glibc

/// How long an accepted connection's peer may stay silent before the kernel ends the connection
/// (Linux tcp(7): `SO_KEEPALIVE` with `TCP_KEEPIDLE`, `TCP_KEEPINTVL`, `TCP_KEEPCNT`, and
/// `TCP_USER_TIMEOUT`), ADR 0021.
///
/// A client that vanishes without FIN or RST (a phone leaving coverage) leaves a half-open
/// connection: Herald's writes sit in the socket unacknowledged, and on Linux's defaults TCP gives
/// up only after `tcp_retries2` retransmissions, about 15 minutes, holding the stream and one of
/// its user's stream slots all that time. A stream is written at least every heartbeat interval
/// (SSE comment, WebSocket ping), so "sent and not acknowledged for `heartbeats` heartbeat
/// intervals" is the test of a vanished peer:
///
/// - `TCP_USER_TIMEOUT` = `heartbeats` × heartbeat: bytes unacknowledged that long (or held back
///   by a zero window that long, kernel 5.11 and later) end the connection with `ETIMEDOUT`;
/// - keep-alive for a connection with nothing in flight: first probe after two heartbeats of
///   silence, then one every heartbeat (with `TCP_USER_TIMEOUT` set, the kernel ends it at the
///   first probe time the user timeout has passed since the peer was last heard). Two, not one:
///   a stream's peer acknowledges a write at least every heartbeat, so a live stream is never
///   probed (a probe racing each heartbeat would double an idle stream's packets); only a
///   connection Herald writes nothing to is (an idle keep-alive connection).
///
/// So a stream whose peer vanished is closed, and its slot freed, within (`heartbeats` + 1)
/// heartbeat intervals: at most one until the next write, then the user timeout.
public struct DeadPeerTimeout: Sendable, Equatable, CustomStringConvertible {
    /// `TCP_KEEPIDLE`: seconds of silence before the first keep-alive probe (two heartbeats).
    public let keepAliveIdleSeconds: Int32
    /// `TCP_KEEPINTVL`: seconds between probes.
    public let keepAliveIntervalSeconds: Int32
    /// `TCP_KEEPCNT`: probes unanswered before the connection is dead.
    public let keepAliveProbes: Int32
    /// `TCP_USER_TIMEOUT`: milliseconds sent bytes may stay unacknowledged.
    public let userTimeoutMilliseconds: Int32

    /// - Parameters:
    ///   - heartbeatSeconds: the stream heartbeat interval (`HERALD_HEARTBEAT_SECONDS`), 1-3600.
    ///   - heartbeats: intervals of silence that mean gone (`HERALD_DEAD_PEER_HEARTBEATS`), 1-100.
    public init(heartbeatSeconds: Int, heartbeats: Int) {
        precondition((1...3600).contains(heartbeatSeconds) && (1...100).contains(heartbeats),
                     "heartbeat 1-3600 s, heartbeats 1-100: the kernel caps TCP_KEEPIDLE/INTVL at 32767 s and TCP_KEEPCNT at 127")
        keepAliveIdleSeconds = Int32(2 * heartbeatSeconds)
        keepAliveIntervalSeconds = Int32(heartbeatSeconds)
        keepAliveProbes = Int32(heartbeats)
        userTimeoutMilliseconds = Int32(heartbeats * heartbeatSeconds * 1000)
    }

    init(keepAliveIdleSeconds: Int32, keepAliveIntervalSeconds: Int32, keepAliveProbes: Int32, userTimeoutMilliseconds: Int32) {
        self.keepAliveIdleSeconds = keepAliveIdleSeconds
        self.keepAliveIntervalSeconds = keepAliveIntervalSeconds
        self.keepAliveProbes = keepAliveProbes
        self.userTimeoutMilliseconds = userTimeoutMilliseconds
    }

    /// Sets the options on a connected TCP socket.
    /// - Throws: `IOError` naming the option (`setsockopt(TCP_USER_TIMEOUT)`) when the kernel
    ///   refuses one, e.g. on a socket that is not TCP; the options set before it stay set.
    public func apply(to fd: Int32) throws(IOError) {
        try Self.set(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "setsockopt(SO_KEEPALIVE)")
        try Self.set(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, keepAliveIdleSeconds, "setsockopt(TCP_KEEPIDLE)")
        try Self.set(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, keepAliveIntervalSeconds, "setsockopt(TCP_KEEPINTVL)")
        try Self.set(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, keepAliveProbes, "setsockopt(TCP_KEEPCNT)")
        try Self.set(fd, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, userTimeoutMilliseconds, "setsockopt(TCP_USER_TIMEOUT)")
    }

    /// The options `fd` has now, read back with `getsockopt`: nil when keep-alive is off (the
    /// kernel's defaults apply).
    /// - Throws: `IOError` naming the option the kernel would not report.
    public static func current(of fd: Int32) throws(IOError) -> DeadPeerTimeout? {
        guard try get(fd, SOL_SOCKET, SO_KEEPALIVE, "getsockopt(SO_KEEPALIVE)") != 0 else { return nil }
        return DeadPeerTimeout(
            keepAliveIdleSeconds: try get(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, "getsockopt(TCP_KEEPIDLE)"),
            keepAliveIntervalSeconds: try get(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, "getsockopt(TCP_KEEPINTVL)"),
            keepAliveProbes: try get(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, "getsockopt(TCP_KEEPCNT)"),
            userTimeoutMilliseconds: try get(fd, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, "getsockopt(TCP_USER_TIMEOUT)"))
    }

    /// "keep-alive after 30 s, every 15 s, 3 probes; unacknowledged bytes 45000 ms".
    public var description: String {
        "keep-alive after \(keepAliveIdleSeconds) s, every \(keepAliveIntervalSeconds) s, \(keepAliveProbes) probes; unacknowledged bytes \(userTimeoutMilliseconds) ms"
    }

    private static func set(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ function: StaticString) throws(IOError) {
        var value = value
        _ = try syscall(function, blocking: true) { setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) }
    }

    private static func get(_ fd: Int32, _ level: Int32, _ name: Int32, _ function: StaticString) throws(IOError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try syscall(function, blocking: true) { getsockopt(fd, level, name, &value, &length) }
        return value
    }
}
