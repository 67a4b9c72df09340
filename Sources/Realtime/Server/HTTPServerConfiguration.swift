/// Every limit and timeout of the HTTP server and its streams, with safe defaults (RT-9).
public struct HTTPServerConfiguration: Sendable {
    /// Numeric listen address (`HERALD_HOST`).
    public var host: String = "127.0.0.1"
    /// Listen port (`HERALD_PORT`); 0 picks a free one.
    public var port: Int = 8080
    /// Head and body size limits (431 / 413).
    public var parserLimits = HTTPRequestParser.Limits()
    /// A request whose head (or body) is not complete this long after its first byte gets 408.
    public var requestTimeoutSeconds: Int = 10
    /// A keep-alive connection with no request for this long is closed.
    public var idleTimeoutSeconds: Int = 75
    /// Stream heartbeat interval (`HERALD_HEARTBEAT_SECONDS`): a stream silent this long is sent
    /// an SSE comment or a WebSocket ping.
    public var heartbeatSeconds: Int = 15
    /// Heartbeat intervals a peer may leave Herald's bytes unacknowledged (or its keep-alive
    /// probes unanswered) before the kernel ends the connection (`HERALD_DEAD_PEER_HEARTBEATS`,
    /// 1-100; 0 leaves the kernel's defaults, about 15 minutes). See `DeadPeerTimeout`.
    public var deadPeerHeartbeats: Int = 3
    /// The reconnect advice's centre, ms: each connection is told a delay spread around it
    /// (`retryMilliseconds(for:)`), so clients cut off together do not all return together.
    public var retryMilliseconds: Int = 3000
    /// Per-connection outbound bound in bytes before the reader counts as slow (RT-8).
    public var outboundMaxBytes: Int = 1 << 20
    /// Per-connection outbound bound in events.
    public var outboundMaxEvents: Int = 1000
    /// How long a slow or closing connection gets to take its last bytes before it is cut.
    public var closeGraceSeconds: Int = 5
    /// Most simultaneous connections from one IP address (0 = unlimited).
    public var maxConnectionsPerIP: Int = 0
    /// Most simultaneous streams of one user (`sub`) on this node (0 = unlimited).
    public var maxStreamsPerUser: Int = 64
    /// Most channels one WebSocket may be subscribed to besides its personal one (`user:{sub}`).
    public var maxChannelsPerConnection: Int = 64
    /// Largest WebSocket message (reassembled), bytes; larger → close 1009.
    public var webSocketMaxMessageBytes: Int = 64 * 1024
    /// The same for the conformance echo endpoint, which Autobahn's 9.* cases drive to 16 MiB.
    public var webSocketEchoMaxMessageBytes: Int = 16 * 1024 * 1024
    /// A WebSocket opened without a token must send `auth` within this.
    public var webSocketAuthTimeoutSeconds: Int = 5
    /// A WebSocket that sends nothing (not even a pong) this long is closed with 1001.
    public var webSocketIdleTimeoutSeconds: Int = 60
    /// A server ping not answered by a pong within this many seconds ends the WebSocket's
    /// foreground at once and closes it with 1001 (`HERALD_WS_PONG_TIMEOUT_SECONDS`): a frozen
    /// app must not keep suppressing its device's pushes for the whole foreground lease.
    public var webSocketPongTimeoutSeconds: Int = 10
    /// Most frames (the first and its continuations) one WebSocket message may arrive in; more →
    /// close 1008 (`HERALD_WS_MAX_FRAGMENTS`). Empty continuations cost no bytes, so the byte
    /// limit alone does not bound them.
    public var webSocketMaxFragments: Int = 128
    /// The same for the conformance echo endpoint (Autobahn's 9.3 cases send 4 MiB in 64-byte fragments).
    public var webSocketEchoMaxFragments: Int = 1 << 17
    /// A WebSocket message (fragmented, or one frame whose payload trickles in) must be complete
    /// within this many seconds of its first frame; otherwise close 1008
    /// (`HERALD_WS_ASSEMBLY_TIMEOUT_SECONDS`). Not applied to the echo endpoint.
    public var webSocketAssemblyTimeoutSeconds: Int = 10
    /// Browser cross-origin rules.
    public var cors = CORSPolicy()

    public init() {}

    /// The TCP options set on every accepted connection, or nil for the kernel's defaults.
    public var deadPeerTimeout: DeadPeerTimeout? {
        deadPeerHeartbeats > 0 ? DeadPeerTimeout(heartbeatSeconds: heartbeatSeconds, heartbeats: deadPeerHeartbeats) : nil
    }

    /// The reconnect delay (ms) advised to one connection: `retryMilliseconds` ± 50 %, the same
    /// for the same connection id every time (FNV-1a of the id, then mixed), spread evenly across ids. Used
    /// for the SSE `retry:` field and the `shutdown` event/message, so a restart does not bring
    /// every client back in the same instant.
    public func retryMilliseconds(for connectionID: String) -> Int {
        let base = max(retryMilliseconds, 0)
        guard base > 1 else { return base }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in connectionID.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        // Ids differ in their last characters only: a final avalanche (splitmix64's) spreads them.
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        hash ^= hash >> 31
        // `span` values: from base/2 to base*3/2 inclusive.
        let span = UInt64(base) + 1
        return base / 2 + Int(hash % span)
    }
}
