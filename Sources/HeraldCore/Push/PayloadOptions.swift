/// How an app's pushes carry their data (SPEC AP-4, seed 004): flat at the top level (seed 001),
/// or all under one root key — an object next to `aps` on APNs, one JSON string in `data[root]` on
/// FCM, a nested object in Expo's and Web Push's `data` — with Herald's own keys (kind, notification
/// id, delivery id, cursor) inside it too, so the app's SDK finds everything in one place.
///
/// One value per app: `HERALD_PAYLOAD_ROOT_KEY` for the default app; the apps work holds it per app.
public struct PayloadOptions: Sendable, Equatable {
    /// The root key (`respondo`), or nil for top-level data keys.
    public let rootKey: String?

    /// Top-level data keys (seed 001).
    public static let flat = PayloadOptions(uncheckedRootKey: nil)

    /// - Parameter rootKey: 1–64 of `A-Z a-z 0-9 _ - .`; not a key the providers reserve (`aps`,
    ///   `from`, `notification`, `message_type`, `collapse_key`, `google.*`, `gcm.*`). Nil: flat.
    /// - Throws: `PayloadOptionsError.invalidRootKey` naming the rule it breaks.
    public init(rootKey: String?) throws(PayloadOptionsError) {
        if let rootKey { try Self.check(rootKey) }
        self.rootKey = rootKey
    }

    private init(uncheckedRootKey: String?) {
        rootKey = uncheckedRootKey
    }

    /// Keys APNs or FCM give a meaning of their own at the top level of a payload (FCM also
    /// refuses `gcm`, `google` and anything under `google.` or `gcm.`).
    public static let reservedKeys: Set<String> = ["aps", "from", "notification", "message_type", "collapse_key", "gcm", "google"]

    /// Whether a provider would refuse `key` as a top-level data key (compared without regard to
    /// case, the stricter reading): a root key, or a catalog's kind and notification-id keys.
    public static func isReservedDataKey(_ key: String) -> Bool {
        let lower = key.lowercased()
        return reservedKeys.contains(lower) || lower.hasPrefix("google.") || lower.hasPrefix("gcm.")
    }

    private static func check(_ key: String) throws(PayloadOptionsError) {
        let allowed = key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."): true
            default: false
            }
        }
        guard (1...64).contains(key.utf8.count), allowed else {
            throw .invalidRootKey(key, "must be 1-64 characters of A-Z a-z 0-9 _ - .")
        }
        guard !isReservedDataKey(key) else {
            throw .invalidRootKey(key, "is reserved by APNs or FCM")
        }
    }
}

/// Why a `PayloadOptions` value was refused.
public enum PayloadOptionsError: Error, Equatable, Sendable {
    /// The root key and the rule it breaks.
    case invalidRootKey(String, String)

    /// One line for the operator, e.g. `HERALD_PAYLOAD_ROOT_KEY "aps" is reserved by APNs or FCM`.
    public var message: String {
        switch self {
        case .invalidRootKey(let key, let rule): "root key \"\(key)\" \(rule)"
        }
    }
}
