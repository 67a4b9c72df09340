import HeraldCore
import PushHTTP

/// Where FCM HTTP v1 lives: `HERALD_FCM_URL`, default `https://fcm.googleapis.com` (SPEC settings
/// table). The OAuth token URL is not here: it comes from the service account's `token_uri`.
public struct FCMEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// Scheme, host and optional port, no trailing slash.
    public let baseURL: String

    /// Google's endpoint.
    public static let production = FCMEndpoint(baseURL: "https://fcm.googleapis.com")

    /// - Parameter baseURL: a trailing `/` is dropped.
    public init(baseURL: String) {
        var url = Substring(baseURL)
        while url.hasSuffix("/") { url.removeLast() }
        self.baseURL = String(url)
    }

    /// Reads `HERALD_FCM_URL`; unset or blank → Google's endpoint.
    public init(settings environment: [String: String]) {
        self = EnvironmentReading.value("HERALD_FCM_URL", in: environment).map(FCMEndpoint.init(baseURL:)) ?? .production
    }

    /// `POST` target for one message: `<base>/v1/projects/<project>/messages:send`.
    public func sendURL(projectID: String) -> String { "\(baseURL)/v1/projects/\(projectID)/messages:send" }

    public var description: String { baseURL }
}
