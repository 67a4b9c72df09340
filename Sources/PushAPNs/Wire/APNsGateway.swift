import HeraldCore
import PushHTTP

/// An APNs gateway: production or sandbox, and the base URL to reach it (SPEC PU-1, settings table).
///
/// Development builds get sandbox device tokens, TestFlight and App Store builds production ones;
/// a token sent to the other gateway is answered `400 BadDeviceToken` (push-providers.md §1.1).
/// The base URL is a setting so tests can point it at the local provider double.
///
/// Named "gateway", not "environment": the `API` target already has `APNsEnvironment`, the
/// device's stored `sandbox | production` value, and both are visible in `herald`.
public struct APNsGateway: Hashable, Sendable, CustomStringConvertible {
    /// `true` for the sandbox (development) gateway.
    public let isSandbox: Bool
    /// Scheme, host and optional port, no trailing slash, e.g. `https://api.push.apple.com`.
    public let baseURL: String
    /// `baseURL` + `/3/device/`: a device's request URL is this and its token (made once, not
    /// per push).
    public let devicePathPrefix: String

    /// `production` or `sandbox`: the device's `environment` value.
    public var name: String { isSandbox ? "sandbox" : "production" }

    /// Apple's production gateway, `https://api.push.apple.com` (default of `HERALD_APNS_URL`).
    public static let production = APNsGateway(isSandbox: false, baseURL: "https://api.push.apple.com")
    /// Apple's sandbox gateway, `https://api.sandbox.push.apple.com` (default of `HERALD_APNS_SANDBOX_URL`).
    public static let sandbox = APNsGateway(isSandbox: true, baseURL: "https://api.sandbox.push.apple.com")

    /// - Parameters:
    ///   - isSandbox: which gateway this is.
    ///   - baseURL: where it is; a trailing `/` is dropped.
    public init(isSandbox: Bool, baseURL: String) {
        self.isSandbox = isSandbox
        var url = Substring(baseURL)
        while url.hasSuffix("/") { url.removeLast() }
        self.baseURL = String(url)
        self.devicePathPrefix = self.baseURL + "/3/device/"
    }

    public var description: String { "\(name) (\(baseURL))" }
}
