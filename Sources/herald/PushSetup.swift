import API
import Foundation
import HeraldCore
import PushBridge
import Realtime

/// Push delivery from the environment (PU-6): each provider on its own when its credentials are
/// set and parse; none → "push notifications disabled" once, and everything else still runs.
enum PushSetup {
    /// - Returns: the dispatcher's provider settings; a provider whose key does not parse is off,
    ///   with an error naming the variable.
    static func providers(environment: [String: String]) -> (apns: PushDispatcher.APNs?, fcm: PushDispatcher.FCM?) {
        var apns: PushDispatcher.APNs?
        var fcm: PushDispatcher.FCM?
        do {
            if let credentials = try APNsCredentials.load(environment: environment) {
                apns = PushDispatcher.APNs(credentials: credentials, gateways: APNsGateways(settings: environment))
            }
        } catch {
            Log.error("APNs disabled: its credentials are unusable", ["error": error.message])
        }
        do {
            if let credentials = try FCMCredentials.load(environment: environment) {
                fcm = PushDispatcher.FCM(credentials: credentials, endpoint: FCMEndpoint(settings: environment))
            }
        } catch {
            Log.error("FCM disabled: its credentials are unusable", ["error": error.message])
        }
        if apns == nil && fcm == nil {
            Log.info("push notifications disabled", ["reason": "no usable APNS_* or FCM_* credentials"])
        } else {
            Log.info("push notifications enabled", ["apns": apns == nil ? "off" : "on", "fcm": fcm == nil ? "off" : "on"])
        }
        return (apns, fcm)
    }

    /// The structured log as PushBridge's log.
    static let log = PushLog { level, message, metadata in
        let pairs = metadata.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        switch level {
        case .info: Log.log(.info, message, metadata: pairs)
        case .warning: Log.log(.warning, message, metadata: pairs)
        case .error: Log.log(.error, message, metadata: pairs)
        }
    }
}
