import HeraldCore
import PushHTTP

/// Where and how Herald talks to Expo's push service (PU-8a), from the environment:
///
/// | variable | meaning |
/// |---|---|
/// | `HERALD_EXPO_URL` | base URL, default `https://exp.host` (tests: the provider double) |
/// | `HERALD_EXPO_ACCESS_TOKEN` | the project's access token, sent as `Authorization: Bearer` (required by Expo when "enhanced push security" is on) |
/// | `HERALD_EXPO_ENABLED` | `1` sends to Expo without a token or URL (Expo needs no credentials by default) |
/// | `HERALD_EXPO_BATCH_MS` | how long a send waits for others to share its request (≤ 100 messages), default 10 ms |
///
/// Expo is on when any of the first three is set: Herald never sends to a third party unasked.
public struct ExpoSettings: Sendable, Equatable {
    /// Expo's service.
    public static let defaultBaseURL = "https://exp.host"

    /// Scheme, host and optional port (and path prefix), no trailing slash.
    public var baseURL: String
    /// The access token, or nil (then no `Authorization` header).
    public var accessToken: String?
    /// Milliseconds a first message waits for more before its request goes out.
    public var batchWindowMilliseconds: Int
    /// Request bodies larger than this are gzipped (the official SDK's 1 KiB).
    public var gzipThresholdBytes: Int

    /// - Parameters: see the properties; a trailing `/` of `baseURL` is dropped.
    public init(baseURL: String = defaultBaseURL, accessToken: String? = nil, batchWindowMilliseconds: Int = 10, gzipThresholdBytes: Int = 1024) {
        var url = Substring(baseURL)
        while url.hasSuffix("/") { url.removeLast() }
        self.baseURL = String(url)
        self.accessToken = accessToken
        self.batchWindowMilliseconds = batchWindowMilliseconds
        self.gzipThresholdBytes = gzipThresholdBytes
    }

    /// `POST` target for tickets: `<base>/--/api/v2/push/send`.
    public var sendURL: String { baseURL + "/--/api/v2/push/send" }
    /// `POST` target for receipts: `<base>/--/api/v2/push/getReceipts`.
    public var receiptsURL: String { baseURL + "/--/api/v2/push/getReceipts" }

    /// Reads the variables above.
    ///
    /// - Returns: nil when Expo is not enabled.
    /// - Throws: `PushCredentialError.invalidValue` naming a malformed variable (a URL that is
    ///   not http(s), a batch window outside 0…1000 ms, `HERALD_EXPO_ENABLED` not 1 or 0, or a spelling of them: true/false, yes/no, on/off).
    public static func load(environment: [String: String]) throws(PushCredentialError) -> ExpoSettings? {
        let url = EnvironmentReading.value("HERALD_EXPO_URL", in: environment)
        let token = EnvironmentReading.value("HERALD_EXPO_ACCESS_TOKEN", in: environment)
        var enabled = false
        if let raw = EnvironmentReading.value("HERALD_EXPO_ENABLED", in: environment) {
            switch raw.lowercased() {
            case "1", "true", "yes", "on": enabled = true
            case "0", "false", "no", "off": enabled = false
            default: throw .invalidValue(variable: "HERALD_EXPO_ENABLED", reason: "must be 1 or 0 (true/false, yes/no and on/off are read too), got '\(raw)'")
            }
        }
        guard enabled || url != nil || token != nil else { return nil }
        if let url, !(url.hasPrefix("https://") || url.hasPrefix("http://")) {
            throw .invalidValue(variable: "HERALD_EXPO_URL", reason: "must be an http:// or https:// URL")
        }
        var settings = ExpoSettings(baseURL: url ?? defaultBaseURL, accessToken: token)
        if let raw = EnvironmentReading.value("HERALD_EXPO_BATCH_MS", in: environment) {
            // Digits only, as Herald's other numeric settings: `Int` also reads `+5`.
            guard raw.isASCIIDigits, let window = Int(raw), (0...1000).contains(window) else {
                throw .invalidValue(variable: "HERALD_EXPO_BATCH_MS", reason: "must be a whole number of ms in 0...1000, in digits only, got '\(raw)'")
            }
            settings.batchWindowMilliseconds = window
        }
        return settings
    }
}
