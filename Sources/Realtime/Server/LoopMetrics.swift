/// Counters of one event loop, written without locks by the loop and read by it on request
/// (`HTTPServer.snapshot`). Owned by the loop.
final class LoopMetrics {
    /// Responses by `METHOD /pattern` and status.
    private(set) var responses: [ResponseKey: UInt64] = [:]
    /// Streams cut as slow consumers (RT-8).
    var slowConsumerCuts: UInt64 = 0
    /// Connections accepted since start.
    var connectionsAccepted: UInt64 = 0

    struct ResponseKey: Hashable {
        let route: String
        let status: Int
    }

    func countResponse(route: String, status: Int) {
        responses[ResponseKey(route: route, status: status), default: 0] &+= 1
    }
}

/// What the server's loops report for `/metrics` and `/readyz`, summed over loops.
public struct ServerSnapshot: Sendable {
    /// Open connections by kind: `http`, `sse`, `websocket`.
    public var connections: [String: Int] = [:]
    /// Open streams by transport and reported app state: `["sse|foreground": 3]`.
    public var streamsByState: [String: Int] = [:]
    public var connectionsAccepted: UInt64 = 0
    public var slowConsumerCuts: UInt64 = 0
    /// Messages written to subscribers.
    public var messagesDelivered: UInt64 = 0
    /// Responses by route and status.
    public var responses: [(route: String, status: Int, count: UInt64)] = []
    /// Loops that answered (all of them, when the server is healthy).
    public var loopsAnswering = 0
    public var loopCount = 0
}
