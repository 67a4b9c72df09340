/// What Herald knows about a user beyond their devices: their language, set by the app backend
/// (`PUT /v1/users/{id}`; seed 000: "without a device locale, the user's profile language").
public struct UserProfile: Sendable, Equatable {
    public var app: String
    public var userID: String
    /// BCP 47 tag, normalised (`pt-BR`); nil when the app never set one or cleared it. A push to a
    /// device without its own locale is rendered in it, before the app's default (NO-5).
    public var locale: String?
    /// Unix ms of the last change.
    public var updatedAt: Int64

    public init(app: String = "default", userID: String, locale: String?, updatedAt: Int64) {
        self.app = app
        self.userID = userID
        self.locale = locale
        self.updatedAt = updatedAt
    }
}
