import HeraldCore

/// Turns an app's push credentials into its provider instances (AP-2). The executable implements
/// it, because only it knows the provider adapters (ADR 0001); building is also the validation,
/// so a credential that does not parse is refused when it is set.
public protocol AppPushFactory: Sendable {
    /// - Parameters:
    ///   - app: whose providers these are (each app's connections and auth tokens are its own).
    ///   - push: the non-secret half (topic, key id, team id, project id, VAPID subject).
    ///   - secrets: the opened secrets by field (`apns_key_p8`, `fcm_service_account`, …).
    /// - Returns: one provider per configured kind.
    /// - Throws: `AppSettingError` naming the request field (`push.apns.key_p8`, `push.fcm.service_account`).
    func providers(app: AppID, push: AppPushSettings, secrets: [AppSecretField: [UInt8]]) throws(AppSettingError) -> [any PushProvider]

    /// The app was deleted: close what its providers held (connections).
    func release(app: AppID)
}
