import API
import Foundation
import HeraldCore
import PushAPNs
import PushExpo
import PushFCM
import PushHTTP
import PushWebPush
import Realtime

/// Push delivery from the environment (PU-6): each provider on its own when its credentials are
/// set and parse; none → "push notifications disabled" once, and everything else still runs.
/// The one place that knows which provider adapters exist and builds them.
enum PushSetup {
    /// The provider adapters of this build, credentials or not: their token rules check
    /// registrations, and a push to one without credentials is "not configured", not "unsupported".
    static let adapters: [any PushProvider.Type] = [APNsProvider.self, FCMProvider.self, ExpoProvider.self, WebPushProvider.self]

    /// What the environment configures, read before any HTTP client exists.
    struct Credentials {
        var apns: (credentials: APNsCredentials, gateways: APNsGateways)?
        var fcm: (credentials: FCMCredentials, endpoint: FCMEndpoint)?
        /// `HERALD_EXPO_*`: Expo needs no credential; it is on when one of its settings is set.
        var expo: ExpoSettings?
        /// `HERALD_VAPID_*`: Web Push is on when a VAPID key and subject are set.
        var vapid: VAPIDCredentials?
        /// `HERALD_WEBPUSH_ALLOW_HTTP` (default: dev mode).
        var webPushAllowHTTP = false
        /// `HERALD_WEBPUSH_ALLOW_PRIVATE` (default: dev mode).
        var webPushAllowPrivate = false
        var isEmpty: Bool { apns == nil && fcm == nil && expo == nil && vapid == nil }
    }

    /// - Returns: the providers' settings; a provider whose key or setting does not parse is off,
    ///   with an error naming the variable, and the start goes on (PU-6: the same for all four).
    static func credentials(environment: [String: String], webPushAllowHTTP: Bool = false, webPushAllowPrivate: Bool = false) -> Credentials {
        var found = Credentials()
        found.webPushAllowHTTP = webPushAllowHTTP
        found.webPushAllowPrivate = webPushAllowPrivate
        do {
            if let credentials = try APNsCredentials.load(environment: environment) {
                found.apns = (credentials, APNsGateways(settings: environment))
            }
        } catch {
            Log.error("APNs disabled: its credentials are unusable", ["error": error.message])
        }
        do {
            if let credentials = try FCMCredentials.load(environment: environment) {
                found.fcm = (credentials, FCMEndpoint(settings: environment))
            }
        } catch {
            Log.error("FCM disabled: its credentials are unusable", ["error": error.message])
        }
        do {
            found.expo = try ExpoSettings.load(environment: environment)
        } catch {
            Log.error("Expo disabled: its settings are unusable", ["error": error.message])
        }
        do {
            found.vapid = try VAPIDCredentials.load(environment: environment)
        } catch {
            Log.error("Web Push disabled: its VAPID settings are unusable", ["error": error.message])
        }
        if found.isEmpty {
            Log.info("push notifications disabled", ["reason": "no usable APNS_*, FCM_*, HERALD_EXPO_* or HERALD_VAPID_* settings"])
        } else {
            Log.info("push notifications enabled", ["apns": found.apns == nil ? "off" : "on", "fcm": found.fcm == nil ? "off" : "on",
                                                    "expo": found.expo == nil ? "off" : "on", "webpush": found.vapid == nil ? "off" : "on"])
        }
        return found
    }

    /// The registry of every adapter, with an APNs / FCM / Web Push provider for each configured credential set.
    ///
    /// - Parameter clients: the HTTP/2 clients the providers share (APNs and FCM on the native one,
    ///   Expo and Web Push on libcurl); nil builds none (no credentials, or the client could not start).
    static func providers(_ credentials: Credentials, clients: PushClients?) -> PushProviders {
        var configured: [any PushProvider] = []
        if let clients {
            if let apns = credentials.apns {
                configured.append(APNsProvider(credentials: apns.credentials, gateways: apns.gateways, transport: clients.apnsFCM))
            }
            if let fcm = credentials.fcm {
                configured.append(FCMProvider(credentials: fcm.credentials, endpoint: fcm.endpoint, transport: clients.apnsFCM))
            }
            if let expo = credentials.expo {
                configured.append(ExpoProvider(settings: expo, transport: clients.general))
            }
            if let vapid = credentials.vapid {
                configured.append(WebPushProvider(credentials: vapid, transport: clients.general, allowLoopbackHTTP: credentials.webPushAllowHTTP,
                                                  allowPrivateAddresses: credentials.webPushAllowPrivate))
            }
        }
        return PushProviders(adapters: adapters, configured: configured)
    }

    /// The structured log as the core's `Logger` (the notifier, the delivery worker).
    static let log = Logger { level, message, metadata in
        let pairs = metadata.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        switch level {
        case .info: Log.log(.info, message, metadata: pairs)
        case .warning: Log.log(.warning, message, metadata: pairs)
        case .error: Log.log(.error, message, metadata: pairs)
        }
    }
}
