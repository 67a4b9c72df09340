/// Sends one provider request and calls back once, from any thread (in production `HTTP2PushTransport`
/// over `NativeHTTP2Client` for APNs and FCM, over the libcurl `HTTP2Client` for Expo and Web Push; a
/// fake in tests).
public protocol PushTransport: Sendable {
    /// - Parameters:
    ///   - request: the request, sent unchanged.
    ///   - completion: called exactly once with the provider's answer (any status), or the
    ///     transport failure (`PushTransportError` for both HTTP/2 clients).
    func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void)

    /// Stops giving new requests to `connection` because an answer on it said it is unusable
    /// (APNs `Shutdown`, `IdleTimeout`, `UnrelatedKeyIdInToken`, `TooManyProviderTokenUpdates`:
    /// `PushClassification.reconnect`, ADR 0018): its streams in flight finish, then it closes, and
    /// the next request goes on another connection, opened if need be — as after the server's
    /// GOAWAY (RFC 9113 §6.8). Returns at once; a connection already closed is no error.
    func retireConnection(_ connection: PushConnectionID)
}

extension PushTransport {
    /// Nothing to retire: a transport whose answers name no connection (libcurl's, a fake).
    public func retireConnection(_ connection: PushConnectionID) {}
}
