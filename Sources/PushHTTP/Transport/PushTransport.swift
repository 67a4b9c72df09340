/// Sends one provider request and calls back once, from any thread (in production `HTTP2PushTransport`
/// over `NativeHTTP2Client` for APNs and FCM, over the libcurl `HTTP2Client` for Expo and Web Push; a
/// fake in tests).
public protocol PushTransport: Sendable {
    /// - Parameters:
    ///   - request: the request, sent unchanged.
    ///   - completion: called exactly once with the provider's answer (any status), or the
    ///     transport failure (`PushTransportError` for both HTTP/2 clients).
    func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void)
}
