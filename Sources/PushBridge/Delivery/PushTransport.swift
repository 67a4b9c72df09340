/// Sends one provider request and calls back once, from any thread (the libcurl HTTP/2 client in
/// production; a fake in tests).
public protocol PushTransport: Sendable {
    func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void)
}

/// Where one push goes: a device token and how to reach it.
public struct PushTarget: Sendable, Equatable {
    /// `apns` or `fcm` (`webpush` is not delivered yet).
    public var provider: String
    public var token: String
    /// iOS: `sandbox` or `production`.
    public var environment: String?

    public init(provider: String, token: String, environment: String?) {
        self.provider = provider
        self.token = token
        self.environment = environment
    }
}
