/// One registered push device as stored (DV-1): a token bound to the session that registered it.
public struct DeviceRecord: Sendable, Equatable {
    public var id: String
    public var app: String
    public var userID: String
    /// The registering session; nil once that session row is gone.
    public var sessionID: String?
    /// `ios`, `android` or `web`.
    public var platform: String
    /// `apns`, `fcm` or `webpush`: who delivers to the token.
    public var provider: String
    public var token: String
    /// iOS only: `sandbox` or `production`.
    public var environment: String?
    public var installationID: String?
    public var locale: String?
    public var appVersion: String?
    public var deviceName: String?
    /// Unix ms.
    public var createdAt: Int64
    /// Unix ms of the last registration.
    public var lastSeenAt: Int64
    /// Whether its session is alive (not ended, not past `expires_at`), filled by queries.
    public var sessionActive: Bool

    public init(id: String, app: String, userID: String, sessionID: String?, platform: String, provider: String,
                token: String, environment: String?, installationID: String?, locale: String?, appVersion: String?,
                deviceName: String?, createdAt: Int64, lastSeenAt: Int64, sessionActive: Bool) {
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
    /// The token's `sid` names another user's session: sids must be unique across users.
    case sessionConflict
}

extension DeviceRegistration {
    /// The session a device binds to in an app whose tokens have no session claim (AP-5): one
    /// per app and user, never ended by a client; `DELETE /v1/sessions/{sid}` with it ends the
    /// user's devices. It starts with `~`, so it never equals a `sid` some token carries.
    public static func userSessionID(app: String, userID: String) -> String { AppNamespace.qualified(userID, app: app) }
}
