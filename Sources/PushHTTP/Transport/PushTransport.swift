/// Sends one provider request and calls back once, from any thread (the libcurl HTTP/2 client in
/// production; a fake in tests).
public protocol PushTransport: Sendable {
    /// - Parameters:
    ///   - request: the request, sent unchanged.
    ///   - completion: called exactly once with the provider's answer (any status), or the
    ///     transport failure (`PushTransportError` for the libcurl client).
    func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void)
}
