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

    /// The Web Push application server key of the app's VAPID credentials (base64url of the
    /// 65-byte uncompressed P-256 point, RFC 8292 §3.2), for `GET /v1/push/vapid-public-key?app=`.
    /// - Returns: nil when the app has no VAPID key, or it does not load.
    func webPushPublicKey(push: AppPushSettings, secrets: [AppSecretField: [UInt8]]) -> String?

    /// The app was deleted: close what its providers held (connections).
    func release(app: AppID)
}
