/// Where one push goes: a device token and how to reach it, as the device registered it.
public struct PushTarget: Sendable, Equatable {
    /// Who delivers to the token; `PushProviders` picks the adapter by it.
    public var provider: PushProviderID
    /// The token as stored: lower-case hex for APNs, opaque text for FCM.
    public var token: String
    /// iOS only: `sandbox` or `production` (the APNs gateway); nil elsewhere.
    public var environment: String?

    /// - Parameters: see the properties; `environment` is nil for everything but APNs.
    public init(provider: PushProviderID, token: String, environment: String?) {
        self.provider = provider
        self.token = token
        self.environment = environment
    }
}
