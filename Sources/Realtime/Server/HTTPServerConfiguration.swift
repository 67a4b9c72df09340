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
    /// SSE comment heartbeat interval (`HERALD_HEARTBEAT_SECONDS`).
    public var heartbeatSeconds: Int = 15
    /// The SSE `retry:` hint, ms.
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
    /// Most channels one WebSocket may be subscribed to.
    public var maxChannelsPerConnection: Int = 64
    /// Largest WebSocket message (reassembled), bytes; larger → close 1009.
    public var webSocketMaxMessageBytes: Int = 64 * 1024
    /// The same for the conformance echo endpoint, which Autobahn's 9.* cases drive to 16 MiB.
    public var webSocketEchoMaxMessageBytes: Int = 16 * 1024 * 1024
    /// A WebSocket opened without a token must send `auth` within this.
    public var webSocketAuthTimeoutSeconds: Int = 5
    /// A WebSocket that sends nothing (not even a pong) this long is closed with 1001.
    public var webSocketIdleTimeoutSeconds: Int = 60
    /// Browser cross-origin rules.
    public var cors = CORSPolicy()

    public init() {}
}
