/// A device token its provider would never accept (DV-1), found at registration so a bad token is
/// a 400 for the app instead of a dead letter later.
///
/// The message is the API's answer for field `token` (`{"error":"invalid_request",…}`), so each
/// provider words its own rule; clients have seen these exact texts since DV-1.
public struct DeviceTokenError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The rule the token breaks, in words for the app developer.
    public let message: String
    /// The request field to name instead of `token`, when the token was built from several
    /// fields (a Web Push subscription: `subscription.keys.p256dh`); nil for `token`.
    public let field: String?

    public init(_ message: String, field: String? = nil) {
        self.message = message
        self.field = field
    }

    public var description: String { message }
}

/// The token rule of providers whose tokens are opaque strings (FCM registration tokens, Web Push):
/// 1–4096 printable ASCII characters, kept as given.
public enum OpaqueDeviceToken {
    /// The refusal, worded as the API has always answered it.
    public static let error = DeviceTokenError("a token is 1-4096 printable ASCII characters")

    /// - Returns: `token` unchanged.
    /// - Throws: `DeviceTokenError` when empty, longer than 4096 bytes, or not printable ASCII.
    public static func validate(_ token: String) throws(DeviceTokenError) -> String {
        let utf8 = token.utf8
        guard (1...4096).contains(utf8.count), utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { throw error }
        return token
    }
}
