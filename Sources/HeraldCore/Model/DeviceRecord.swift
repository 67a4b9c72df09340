/// One registered push device as stored (DV-1): a token bound to the session that registered it.
public struct DeviceRecord: Sendable, Equatable {
    /// The fields, in one shared box: a device read for a push is held by the job's hand-over, the
    /// send's completion and the outcome's write, and as a plain struct each copy retained and
    /// released its dozen strings (issue 17). Copy on write: a change to a shared box copies it first.
    private var fields: Fields

    /// The stored fields. Mutated only through `unique()`, i.e. while one record owns it.
    private final class Fields: CopyOnWriteFields, @unchecked Sendable {
        var id: String
        var app: String
        var userID: String
        var sessionID: String?
        var platform: String
        var provider: String
        var token: String
        var environment: String?
        var installationID: String?
        var locale: String?
        var appVersion: String?
        var deviceName: String?
        var createdAt: Int64
        var lastSeenAt: Int64
        var sessionActive: Bool
        var sessionExpiresAt: Int64?

        init(id: String, app: String, userID: String, sessionID: String?, platform: String, provider: String, token: String,
             environment: String?, installationID: String?, locale: String?, appVersion: String?, deviceName: String?,
             createdAt: Int64, lastSeenAt: Int64, sessionActive: Bool, sessionExpiresAt: Int64?) {
            self.id = id
            self.app = app
            self.userID = userID
            self.sessionID = sessionID
            self.platform = platform
            self.provider = provider
            self.token = token
            self.environment = environment
            self.installationID = installationID
            self.locale = locale
            self.appVersion = appVersion
            self.deviceName = deviceName
            self.createdAt = createdAt
            self.lastSeenAt = lastSeenAt
            self.sessionActive = sessionActive
            self.sessionExpiresAt = sessionExpiresAt
        }

        func copy() -> Fields {
            Fields(id: id, app: app, userID: userID, sessionID: sessionID, platform: platform, provider: provider, token: token,
                   environment: environment, installationID: installationID, locale: locale, appVersion: appVersion,
                   deviceName: deviceName, createdAt: createdAt, lastSeenAt: lastSeenAt, sessionActive: sessionActive,
                   sessionExpiresAt: sessionExpiresAt)
        }

        func equals(_ other: Fields) -> Bool {
            id == other.id
                && app == other.app
                && userID == other.userID
                && sessionID == other.sessionID
                && platform == other.platform
                && provider == other.provider
                && token == other.token
                && environment == other.environment
                && installationID == other.installationID
                && locale == other.locale
                && appVersion == other.appVersion
                && deviceName == other.deviceName
                && createdAt == other.createdAt
                && lastSeenAt == other.lastSeenAt
                && sessionActive == other.sessionActive
                && sessionExpiresAt == other.sessionExpiresAt
        }
    }

    /// The box, copied first when another record shares it.
    private mutating func unique() -> Fields { uniqueFields(&fields) }

    /// Field by field, at once when both share one box.
    public static func == (lhs: DeviceRecord, rhs: DeviceRecord) -> Bool { sameFields(lhs.fields, rhs.fields) }

    public var id: String {
        get { fields.id }
        set { unique().id = newValue }
    }
    public var app: String {
        get { fields.app }
        set { unique().app = newValue }
    }
    public var userID: String {
        get { fields.userID }
        set { unique().userID = newValue }
    }
    /// The registering session; nil once that session row is gone.
    public var sessionID: String? {
        get { fields.sessionID }
        set { unique().sessionID = newValue }
    }
    /// `ios`, `android` or `web`.
    public var platform: String {
        get { fields.platform }
        set { unique().platform = newValue }
    }
    /// `apns`, `fcm` or `webpush`: who delivers to the token.
    public var provider: String {
        get { fields.provider }
        set { unique().provider = newValue }
    }
    public var token: String {
        get { fields.token }
        set { unique().token = newValue }
    }
    /// iOS only: `sandbox` or `production`.
    public var environment: String? {
        get { fields.environment }
        set { unique().environment = newValue }
    }
    public var installationID: String? {
        get { fields.installationID }
        set { unique().installationID = newValue }
    }
    public var locale: String? {
        get { fields.locale }
        set { unique().locale = newValue }
    }
    public var appVersion: String? {
        get { fields.appVersion }
        set { unique().appVersion = newValue }
    }
    public var deviceName: String? {
        get { fields.deviceName }
        set { unique().deviceName = newValue }
    }
    /// Unix ms.
    public var createdAt: Int64 {
        get { fields.createdAt }
        set { unique().createdAt = newValue }
    }
    /// Unix ms of the last registration.
    public var lastSeenAt: Int64 {
        get { fields.lastSeenAt }
        set { unique().lastSeenAt = newValue }
    }
    /// Whether its session is alive (not ended, not past `expires_at`), filled by queries.
    public var sessionActive: Bool {
        get { fields.sessionActive }
        set { unique().sessionActive = newValue }
    }
    /// Its session's expiry as read (unix ms; nil: none, or no session row), filled by the
    /// queries with `sessionActive`. A device read at one time and pushed later is still in its
    /// session only while the clock is before it: the `DeliveryWorker` compares it at the send
    /// of a job that waited (ADR 0007's amendment), as no write marks a session passing its expiry.
    public var sessionExpiresAt: Int64? {
        get { fields.sessionExpiresAt }
        set { unique().sessionExpiresAt = newValue }
    }

    public init(id: String, app: String, userID: String, sessionID: String?, platform: String, provider: String,
                token: String, environment: String?, installationID: String?, locale: String?, appVersion: String?,
                deviceName: String?, createdAt: Int64, lastSeenAt: Int64, sessionActive: Bool, sessionExpiresAt: Int64? = nil) {
        fields = Fields(id: id, app: app, userID: userID, sessionID: sessionID, platform: platform, provider: provider, token: token,
                        environment: environment, installationID: installationID, locale: locale, appVersion: appVersion,
                        deviceName: deviceName, createdAt: createdAt, lastSeenAt: lastSeenAt, sessionActive: sessionActive,
                        sessionExpiresAt: sessionExpiresAt)
    }
}

/// What a client registers (validated by the API before it gets here).
public struct DeviceRegistration: Sendable {
    public var app: String = "default"
    /// The app's tokens carry no session (AP-5): `sessionID` is the user's standing session
    /// (`DeviceRegistration.userSessionID`), and rotation is by installation id or token only.
    public var bindsToUser = false
    public var userID: String
    public var sessionID: String
    public var platform: String
    public var provider: String
    public var token: String
    public var environment: String?
    public var installationID: String?
    public var locale: String?
    public var appVersion: String?
    public var deviceName: String?

    public init(userID: String, sessionID: String, platform: String, provider: String, token: String,
                environment: String? = nil, installationID: String? = nil, locale: String? = nil,
                appVersion: String? = nil, deviceName: String? = nil) {
        self.userID = userID
        self.sessionID = sessionID
        self.platform = platform
        self.provider = provider
        self.token = token
        self.environment = environment
        self.installationID = installationID
        self.locale = locale
        self.appVersion = appVersion
        self.deviceName = deviceName
    }
}

/// Why a registration was refused.
public enum DeviceRegistrationError: Error, Equatable, Sendable {
    /// The token belongs to another user's installation (seed 003): nothing changed.
    case installationMismatch
    /// The registering session has ended.
    case sessionEnded
    /// The token's `sid` names another user's session of the same app: sids must be unique
    /// across an app's users (another app's session of that `sid` is another session, ADR 0019).
    case sessionConflict
}

extension DeviceRegistration {
    /// The session a device binds to in an app whose tokens have no session claim (AP-5): one
    /// per app and user, never ended by a client; `DELETE /v1/sessions/{sid}` with it ends the
    /// user's devices. It starts with `~`, so it never equals a `sid` some token carries.
    public static func userSessionID(app: String, userID: String) -> String { AppNamespace.qualified(userID, app: app) }
}
