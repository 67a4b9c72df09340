/// The shape of an Expo push token (PU-8a; expo-webpush.md): `ExponentPushToken[…]` or
/// `ExpoPushToken[…]`, the text inside the brackets opaque. Expo's SDK (`isExpoPushToken`) also
/// accepts a bare UUID, which registration takes when the client says `"provider": "expo"`.
///
/// In the core (not the Expo adapter) because registration recognises these tokens on every route
/// whether or not this build or process sends to Expo.
public enum ExpoPushToken {
    /// The refusal for a token that `provider: expo` names but that has neither shape.
    public static let error = DeviceTokenError("an Expo push token is ExponentPushToken[…] or ExpoPushToken[…] (1-4096 printable ASCII characters)")

    /// Whether `token` is `ExponentPushToken[<x>]` or `ExpoPushToken[<x>]` with a non-empty, printable
    /// ASCII `<x>` without brackets, 4096 bytes at most in all: what registration takes as an Expo token
    /// without being told.
    public static func isBracketed(_ token: String) -> Bool {
        let utf8 = token.utf8
        guard utf8.count <= 4096, utf8.last == UInt8(ascii: "]") else { return false }
        let inner: Substring.UTF8View
        if token.hasPrefix("ExponentPushToken[") {
            inner = token.dropFirst("ExponentPushToken[".count).dropLast().utf8
        } else if token.hasPrefix("ExpoPushToken[") {
            inner = token.dropFirst("ExpoPushToken[".count).dropLast().utf8
        } else {
            return false
        }
        return !inner.isEmpty && inner.allSatisfy { $0 >= 0x21 && $0 <= 0x7E && $0 != UInt8(ascii: "[") && $0 != UInt8(ascii: "]") }
    }

    /// Whether `token` starts as an Expo push token does (`ExponentPushToken[` or `ExpoPushToken[`),
    /// well formed or not. Registration takes such a token for Expo, so one cut short or emptied on
    /// its way (`ExponentPushToken[abc`, `ExponentPushToken[]`) is refused by Expo's rule instead of
    /// being stored as an FCM token that no push could ever reach.
    public static func hasExpoPrefix(_ token: String) -> Bool {
        token.hasPrefix("ExponentPushToken[") || token.hasPrefix("ExpoPushToken[")
    }

    /// Expo's rule at registration.
    ///
    /// - Returns: the token unchanged.
    /// - Throws: `error` unless the token is bracketed (`isBracketed`) or a UUID (`8-4-4-4-12` hex).
    public static func validate(_ token: String) throws(DeviceTokenError) -> String {
        guard isBracketed(token) || PushID(token) != nil else { throw error }
        return token
    }
}
