import API
import Foundation
import HeraldCore
import PushAPNs
import PushExpo
import PushFCM
import PushHTTP
import PushWebPush
import Realtime
import Synchronization

/// Builds a stored app's providers from the credentials set through `/v1/apps` (AP-2): each app
/// gets its own instances (own provider-token and OAuth caches) on an HTTP/2 client of its own
/// (PU-1: one connection per app and gateway; APNs refuses a connection whose provider token
/// changes between two apps' pushes), and the gateways of the environment (so a test double serves every app).
/// Each new set of providers (its credentials changed) gets a new client too: APNs refuses a
/// provider token changed on a connection less than 20 minutes after the previous one (429
/// `TooManyProviderTokenUpdates`), and the new APNs provider signs a new token. The replaced
/// client closes when the last push the old providers have in flight completes (its `deinit`). The credentials go
/// through the same loaders as the environment's, given as the variables those read, so the
/// rules are one; a refusal names the request field instead of the variable.
final class AppPushSetup: AppPushFactory {
    /// The process environment: gateway hosts and provider options (not credentials).
    let environment: [String: String]
    /// How each app's client is configured; nil: this process sends no push.
    let clientConfiguration: HTTP2Client.Configuration?
    let webPushAllowHTTP: Bool
    let webPushAllowPrivate: Bool
    /// Each app's newest client, shut down when the app is deleted. Earlier clients are held only
    /// by the providers they were built for, so they end with those providers' last push.
    private let clients = Mutex<[AppID: PushClients]>([:])

    init(environment: [String: String], clientConfiguration: HTTP2Client.Configuration?, webPushAllowHTTP: Bool, webPushAllowPrivate: Bool) {
        self.environment = environment
        self.clientConfiguration = clientConfiguration
        self.webPushAllowHTTP = webPushAllowHTTP
        self.webPushAllowPrivate = webPushAllowPrivate
    }

    func release(app: AppID) {
        clients.withLock { $0.removeValue(forKey: app) }?.shutdown()
    }

    /// A new client for the app's new providers; nil when push is off or it cannot start (logged).
    private func transport(app: AppID) -> PushClients? {
        guard let clientConfiguration else { return nil }
        do {
            let client = try PushClients(configuration: clientConfiguration)
            clients.withLock { $0[app] = client }
            return client
        } catch {
            Log.error("an app's push client could not start", ["app": app.rawValue, "error": "\(error)"])
            return nil
        }
    }

    /// Request fields by the variable a loader names.
    private static let fields: [String: String] = [
        "APNS_KEY_P8": "push.apns.key_p8", "APNS_KEY_ID": "push.apns.key_id", "APNS_TEAM_ID": "push.apns.team_id",
        "APNS_TOPIC": "push.apns.topic", "FCM_SERVICE_ACCOUNT_JSON": "push.fcm.service_account", "FCM_PROJECT_ID": "push.fcm.project_id",
        "HERALD_EXPO_ACCESS_TOKEN": "push.expo.access_token", "HERALD_VAPID_PRIVATE_KEY": "push.webpush.vapid_private_key",
        "HERALD_VAPID_SUBJECT": "push.webpush.subject", "HERALD_VAPID_PUBLIC_KEY": "push.webpush.public_key",
    ]

    func webPushPublicKey(push: AppPushSettings, secrets: [AppSecretField: [UInt8]]) -> String? {
        guard let key = secrets[.vapidPrivateKey].map({ String(decoding: $0, as: UTF8.self) }) else { return nil }
        var env: [String: String] = ["HERALD_VAPID_PRIVATE_KEY": key]
        env["HERALD_VAPID_SUBJECT"] = push.vapidSubject
        env["HERALD_VAPID_PUBLIC_KEY"] = push.vapidPublicKey
        return (try? VAPIDCredentials.load(environment: env))??.publicKeyBase64URL
    }

    func providers(app: AppID, push: AppPushSettings, secrets: [AppSecretField: [UInt8]]) throws(AppSettingError) -> [any PushProvider] {
        // Gateways and options from the environment; credentials only from the app.
        var base = environment.filter { !Self.fields.keys.contains($0.key) && !$0.key.hasSuffix("_PATH") }
        base["HERALD_EXPO_ENABLED"] = nil
        func text(_ field: AppSecretField) -> String? { secrets[field].map { String(decoding: $0, as: UTF8.self) } }
        // Every credential is loaded (checked) first; the app's client starts only for credentials that hold.
        var makers: [(PushClients) -> any PushProvider] = []
        if let key = text(.apnsKey) {
            var env = base
            env["APNS_KEY_P8"] = key
            env["APNS_KEY_ID"] = push.apnsKeyID
            env["APNS_TEAM_ID"] = push.apnsTeamID
            env["APNS_TOPIC"] = push.apnsTopic
            if let credentials = try load("push.apns", { () throws(PushCredentialError) in try APNsCredentials.load(environment: env) }) {
                let gateways = APNsGateways(settings: environment)
                makers.append { APNsProvider(credentials: credentials, gateways: gateways, transport: $0.apnsFCM) }
            }
        }
        if let account = text(.fcmServiceAccount) {
            var env = base
            env["FCM_SERVICE_ACCOUNT_JSON"] = account
            env["FCM_PROJECT_ID"] = push.fcmProjectID
            if let credentials = try load("push.fcm", { () throws(PushCredentialError) in try FCMCredentials.load(environment: env) }) {
                let endpoint = FCMEndpoint(settings: environment)
                makers.append { FCMProvider(credentials: credentials, endpoint: endpoint, transport: $0.apnsFCM) }
            }
        }
        if push.expoEnabled(hasAccessToken: secrets[.expoAccessToken] != nil) {
            var env = base
            env["HERALD_EXPO_ACCESS_TOKEN"] = text(.expoAccessToken)
            env["HERALD_EXPO_ENABLED"] = "1"
            if let settings = try load("push.expo", { () throws(PushCredentialError) in try ExpoSettings.load(environment: env) }) {
                makers.append { ExpoProvider(settings: settings, transport: $0.general) }
            }
        }
        if let key = text(.vapidPrivateKey) {
            var env = base
            env["HERALD_VAPID_PRIVATE_KEY"] = key
            env["HERALD_VAPID_SUBJECT"] = push.vapidSubject
            env["HERALD_VAPID_PUBLIC_KEY"] = push.vapidPublicKey
            if let credentials = try load("push.webpush", { () throws(PushCredentialError) in try VAPIDCredentials.load(environment: env) }) {
                let allowHTTP = webPushAllowHTTP, allowPrivate = webPushAllowPrivate
                makers.append { WebPushProvider(credentials: credentials, transport: $0.general, allowLoopbackHTTP: allowHTTP, allowPrivateAddresses: allowPrivate) }
            }
        }
        guard !makers.isEmpty, let transport = transport(app: app) else { return [] }
        return makers.map { $0(transport) }
    }

    /// Runs a loader, naming the request field of the variable it refused.
    private func load<T>(_ section: String, _ body: () throws(PushCredentialError) -> T?) throws(AppSettingError) -> T? {
        do {
            return try body()
        } catch {
            let variable: String? = switch error {
            case .missingVariables(let names): names.first.map { String($0.prefix { $0 != " " }) }
            case .unreadableKey(let variable, _), .wrongKeyType(let variable, _, _), .invalidServiceAccount(let variable, _),
                 .invalidValue(let variable, _), .unreadableFile(let variable, _, _): variable
            case .conflictingVariables(let a, _): a
            }
            let field = variable.flatMap { Self.fields[$0] } ?? section
            // The loaders' messages name variables; say the field instead.
            var message = error.message
            for (name, path) in Self.fields { message = message.replacingOccurrences(of: name, with: path) }
            throw AppSettingError(field: field, message: message)
        }
    }
}
