import Synchronization

/// The `authorization` header's value (`prefix` + access token) for the last token a provider
/// sent with. The token lasts 40–60 minutes and every push carries it, so its value is built once
/// per token instead of once per push (issue 17: ~1k instructions a push of string building).
///
/// ```swift
/// let authorizations = AuthorizationValueCache(prefix: "bearer ")
/// authorizations.value(for: jwt)   // "bearer <jwt>", the same String while jwt is
/// ```
///
/// # Thread safety
/// A `Mutex` guards the one slot; two threads that miss at once both build the value (the later
/// one stays).
public final class AuthorizationValueCache: Sendable {
    /// What goes before the token, its space included (`bearer ` for APNs, `Bearer ` for FCM).
    public let prefix: String
    private let slot = Mutex<(token: String, value: String)?>(nil)

    /// - Parameter prefix: the scheme and its space, e.g. `Bearer `.
    public init(prefix: String) {
        self.prefix = prefix
    }

    /// `prefix + token`: the value kept for the last token when `token` is that one (equal
    /// strings, compared at once when it is the same `String`), else a new one, then kept.
    public func value(for token: String) -> String {
        let kept = slot.withLock { slot -> String? in
            guard let slot, slot.token == token else { return nil }
            return slot.value
        }
        if let kept { return kept }
        let value = prefix + token
        slot.withLock { $0 = (token, value) }
        return value
    }
}
