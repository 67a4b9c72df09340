/// What the two HTTP/2 push clients have in common: the production transport (`HTTP2PushTransport`)
/// and the shared test scenarios drive either through it.
public protocol HTTP2PushClient: AnyObject, Sendable {
    /// Queues one POST; `completion` runs exactly once, on the client's driver thread (or at once on
    /// the caller's thread after `shutdown`). Any HTTP status is a `.success`.
    func sendReportingInfo(_ request: PushHTTPRequest,
                           completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void)
    /// `HTTP2PushTransport`'s send: like `sendReportingInfo` without the transfer info, the error
    /// widened to `any Error`. The native client keeps the closure as it is; the default wraps it.
    func sendForTransport(_ request: PushHTTPRequest,
                          completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void)
    /// Async variant of `sendReportingInfo`; the exchange is not cancelled with the task.
    func send(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse
    /// Takes `connection` out of service: no new streams, its streams in flight finish, then it
    /// closes (see `PushTransport.retireConnection(_:)`). The libcurl client names no connections
    /// and does nothing.
    func retireConnection(_ connection: PushConnectionID)
    /// Completes everything queued or in flight with `.shutdown` and stops the driver thread. Idempotent.
    func shutdown()
    /// Connections opened so far.
    var connectionsOpened: Int { get }
    /// Requests finished so far (success or failure).
    var requestsCompleted: Int { get }
}

extension HTTP2PushClient {
    public func retireConnection(_ connection: PushConnectionID) {}

    public func sendForTransport(_ request: PushHTTPRequest,
                                 completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
        sendReportingInfo(request) { result, _ in completion(result.mapError { $0 }) }
    }

    /// The async form of `sendReportingInfo`, for both clients. The exchange is not cancelled with
    /// the task; it ends with a response, a transport error, the request timeout, or `.shutdown`.
    public func send(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse {
        let result = await withCheckedContinuation { (cont: CheckedContinuation<Result<PushHTTPResponse, PushTransportError>, Never>) in
            sendReportingInfo(request) { result, _ in cont.resume(returning: result) }
        }
        return try result.get()
    }
}

extension HTTP2Client: HTTP2PushClient {}
