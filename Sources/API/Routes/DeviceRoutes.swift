import Foundation
import HeraldCore
import Realtime

/// Push devices (DV-1 to DV-3) and the compatibility routes of the seed apps (DV-5).
struct DeviceRoutes {
    let authenticator: Authenticator
    let responder: DatabaseResponder
    /// Token rules by provider (DV-1), whether or not the provider has credentials.
    let providers: PushProviders
    /// Accept `http://` loopback Web Push endpoints (`HERALD_WEBPUSH_ALLOW_HTTP`, dev mode).
    var webPushAllowHTTP = false
    /// Accept Web Push endpoints on hosts that are not public (`HERALD_WEBPUSH_ALLOW_PRIVATE`,
    /// dev mode): loopback, private, link-local… addresses and local names (`PublicHostRule`).
    var webPushAllowPrivate = false

    struct RegisterBody: JSONBody {
        let platform: String
        /// Required unless `subscription` is given.
        let token: String?
        /// A browser's `PushSubscription.toJSON()` (Web Push): stored as the token.
        let subscription: SubscriptionBody?
        let provider: String?
        let environment: String?
        let installation_id: String?
        let locale: String?
        let app_version: String?
        let device_name: String?

        /// `subscription` is the browser's: its members are not Herald's to fix.
        static let members = BodyMembers.fields("platform", "token", "subscription", "provider", "environment",
                                                "installation_id", "locale", "app_version", "device_name")
    }

    /// `PushSubscription.toJSON()`: `{"endpoint", "expirationTime", "keys": {"p256dh", "auth"}}`;
    /// `expirationTime` and unknown members are ignored.
    struct SubscriptionBody: Decodable {
        let endpoint: String
        let keys: Keys

        struct Keys: Decodable {
            let p256dh: String
            let auth: String
        }
    }

    /// Seed 003: `platform` is only the OS label; the token is an FCM token on both.
    struct LegacyBody: Decodable {
        let token: String
        let platform: String
        let device_id: String?
    }

    /// Seed 002: camelCase, `platform` ios|android.
    struct DeviceTokenBody: Decodable {
        let token: String
        let platform: String?
        let appVersion: String?
        let locale: String?
    }

    struct TokenOnlyBody: Decodable {
        let token: String
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.registerDevice) { context in try routes.registerDevice(context) }
        table.on(Spec.listDevices) { context in try routes.listDevices(context) }
        table.on(Spec.deleteDevice) { context in try routes.deleteDevice(context) }
        table.on(Spec.registerLegacyDevice) { context in try routes.registerLegacy(context) }
        table.on(Spec.deleteLegacyDevice) { context in try routes.deleteLegacy(context) }
        table.on(Spec.registerDeviceToken) { context in try routes.registerDeviceToken(context) }
        table.on(Spec.deleteDeviceToken) { context in try routes.deleteDeviceToken(context) }
    }

    // MARK: - /v1/me/devices

    func registerDevice(_ context: RequestContext) throws -> RouteResult {
        let claims = try sessionClaims(context)
        let body = try RequestBody.decode(RegisterBody.self, from: context.request)
        guard let platform = DevicePlatform(rawValue: body.platform) else {
            throw HTTPError.invalid("platform", "platform must be ios, android or web")
        }
        // PU-8a: an Expo token names its provider itself.
        var provider = platform.provider(forToken: body.token ?? "")
        if let raw = body.provider {
            guard let chosen = PushProviderID(rawValue: raw) else { throw HTTPError.invalid("provider", "provider must be apns, fcm, webpush or expo") }
            guard platform.accepts(chosen) else {
                throw HTTPError.invalid("provider", "provider \(raw) cannot deliver to platform \(platform.rawValue)")
            }
            if chosen != .expo, ExpoPushToken.hasExpoPrefix(body.token ?? "") {
                guard ExpoPushToken.isBracketed(body.token ?? "") else { throw HTTPError.invalid("token", ExpoPushToken.error.message) }
                throw HTTPError.invalid("provider", "this is an Expo push token: send \"provider\": \"expo\" or leave provider out")
            }
            provider = chosen
        }
        let token: String
        if let subscription = body.subscription {
            token = try webPushToken(subscription, given: body.token, provider: provider)
        } else if let given = body.token {
            do {
                token = try validToken(given, provider: provider)
                if provider == .webpush, !webPushAllowHTTP, given.lowercased().hasPrefix("http:") {
                    throw HTTPError.invalid("token", "a web push endpoint must be https (http://127.0.0.1 is allowed only in dev mode or with HERALD_WEBPUSH_ALLOW_HTTP=1)")
                }
                if provider == .webpush, !webPushAllowPrivate, let reason = (try? WebPushSubscription(token: token))?.nonPublicHost {
                    throw HTTPError(400, "endpoint_not_public", "endpoint host \(reason): a Web Push endpoint must be a push service on the public internet "
                                    + "(HERALD_WEBPUSH_ALLOW_PRIVATE=1 allows others, for tests)", field: "token")
                }
            } catch {
                // iOS apps that use Firebase hold an FCM token: name the fix instead of the hex rule.
                if provider == .apns, Self.looksLikeFCMToken(given) {
                    throw HTTPError.invalid("token", "this looks like an FCM registration token, not an APNs device token: "
                        + "an ios device that registers through Firebase must send \"provider\": \"fcm\"")
                }
                throw error
            }
        } else {
            throw HTTPError.invalid("token", provider == .webpush ? "token or subscription is required" : "token is required")
        }
        var environment: String?
        if let raw = body.environment {
            guard platform == .ios, provider != .expo else {
                throw HTTPError.invalid("environment", provider == .expo ? "environment is for APNs tokens; Expo picks the gateway itself"
                                                                          : "environment is for ios devices only")
            }
            guard let value = APNsEnvironment(rawValue: raw) else { throw HTTPError.invalid("environment", "environment must be sandbox or production") }
            environment = value.rawValue
        } else if platform == .ios, provider != .expo {
            environment = APNsEnvironment.production.rawValue
        }
        var registration = DeviceRegistration(
            userID: claims.subject, sessionID: Self.deviceSession(claims), platform: platform.rawValue, provider: provider.rawValue,
            token: token, environment: environment,
            installationID: try Self.text(body.installation_id, field: "installation_id", max: 128),
            locale: try Self.locale(body.locale, field: "locale"),
            appVersion: try Self.text(body.app_version, field: "app_version", max: 64),
            deviceName: try Self.text(body.device_name, field: "device_name", max: 128))
        registration.app = claims.app.rawValue
        registration.bindsToUser = claims.sessionID == nil
        return store(registration, claims: claims) { device, created in
            .json(created ? 201 : 200, DeviceJSON.encode(device, callerSessionID: Self.deviceSession(claims), maskToken: false))
        }
    }

    func listDevices(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        return responder.read { tx in
            let devices = try tx.devices.list(app: claims.app.rawValue, userID: claims.subject, now: unixMilliseconds())
            let items = devices.map { DeviceJSON.encode($0, callerSessionID: Self.deviceSession(claims), maskToken: true) }
            return .json(200, "{\"devices\":[" + items.joined(separator: ",") + "]}")
        }
    }

    func deleteDevice(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let id = context.pathParameters["id"] ?? ""
        return responder.write { tx in
            // Another user's device is "not found" too: never reveal that it exists.
            guard try tx.devices.delete(app: claims.app.rawValue, id: id, userID: claims.subject) else {
                throw HTTPError(404, "not_found", "no such device")
            }
            return .empty(204)
        }
    }

    // MARK: - Compatibility (DV-5)

    func registerLegacy(_ context: RequestContext) throws -> RouteResult {
        let claims = try sessionClaims(context)
        let body = try RequestBody.decode(lenient: LegacyBody.self, from: context.request)
        // Seed 003 names the OS by its provider's id; the token itself is always an FCM token.
        let platform: DevicePlatform
        switch PushProviderID(rawValue: body.platform) {
        case .fcm?: platform = .android
        case .apns?: platform = .ios
        case .webpush?, .expo?, nil: throw HTTPError.invalid("platform", "platform must be fcm or apns")
        }
        let provider = Self.tokenProvider(body.token)
        let token = try validToken(body.token, provider: provider)
        var registration = DeviceRegistration(
            userID: claims.subject, sessionID: Self.deviceSession(claims), platform: platform.rawValue, provider: provider.rawValue,
            token: token, installationID: try Self.text(body.device_id, field: "device_id", max: 128))
        registration.app = claims.app.rawValue
        registration.bindsToUser = claims.sessionID == nil
        // Seed 003 documents a foreign device_id as 403 `forbidden`; its clients match on that code.
        return store(registration, claims: claims, installationMismatchCode: "forbidden") { _, _ in .empty(204) }
    }

    func deleteLegacy(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let token = context.pathParameters["token"] ?? ""
        return responder.write { tx in
            try tx.devices.delete(app: claims.app.rawValue, token: token, userID: claims.subject)
            return .empty(204)
        }
    }

    func registerDeviceToken(_ context: RequestContext) throws -> RouteResult {
        let claims = try sessionClaims(context)
        let body = try RequestBody.decode(lenient: DeviceTokenBody.self, from: context.request)
        let platform = body.platform.flatMap(DevicePlatform.init(rawValue:)) ?? .android
        if let raw = body.platform, DevicePlatform(rawValue: raw) == nil || raw == "web" {
            throw HTTPError.invalid("platform", "platform must be ios or android")
        }
        // Seed 002's apps register Expo push tokens (ExponentPushToken[…]); other tokens are FCM's.
        let provider = Self.tokenProvider(body.token)
        let token = try validToken(body.token, provider: provider)
        var registration = DeviceRegistration(
            userID: claims.subject, sessionID: Self.deviceSession(claims), platform: platform.rawValue, provider: provider.rawValue,
            token: token, locale: try Self.locale(body.locale, field: "locale"),
            appVersion: try Self.text(body.appVersion, field: "appVersion", max: 64))
        registration.app = claims.app.rawValue
        registration.bindsToUser = claims.sessionID == nil
        return store(registration, claims: claims) { device, created in
            .json(created ? 201 : 200, DeviceJSON.encode(device, callerSessionID: Self.deviceSession(claims), maskToken: false))
        }
    }

    func deleteDeviceToken(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let body = try RequestBody.decode(lenient: TokenOnlyBody.self, from: context.request)
        return responder.write { tx in
            try tx.devices.delete(app: claims.app.rawValue, token: body.token, userID: claims.subject)
            return .empty(204)
        }
    }

    // MARK: - Shared

    /// Registering needs a session to bind the device to (DV-3), unless the app's tokens carry
    /// none (AP-5: no `session_claim`), where devices bind to the user.
    private func sessionClaims(_ context: RequestContext) throws(HTTPError) -> AccessClaims {
        let claims = try authenticator.client(context, now: unixSeconds())
        let bindsToUser = authenticator.apps.app(claims.app)?.settings.tokens.sessionClaim == nil && !claims.app.isDefault
        guard claims.sessionID != nil || bindsToUser else {
            throw HTTPError(403, "session_required", "devices are bound to a session: the access token needs a sid")
        }
        return claims
    }

    /// The session a device is bound to: the token's, or the user's standing one (AP-5).
    private static func deviceSession(_ claims: AccessClaims) -> String {
        claims.sessionID ?? DeviceRegistration.userSessionID(app: claims.app.rawValue, userID: claims.subject)
    }

    /// - Parameter installationMismatchCode: the 403's error code when the token belongs to another
    ///   installation: `installation_mismatch`, or what a compatibility route's seed documents.
    private func store(_ registration: DeviceRegistration, claims: AccessClaims, installationMismatchCode: String = "installation_mismatch",
                       answer: @escaping @Sendable (DeviceRecord, Bool) -> HTTPResponse) -> RouteResult {
        let sessionExpiresAt = claims.sessionExpiresAt.map { $0 * 1000 }
        return responder.write { tx in
            do {
                let (device, created) = try tx.devices.register(registration, sessionExpiresAt: sessionExpiresAt,
                                                                 newID: UUID().uuidString.lowercased(), now: unixMilliseconds())
                return answer(device, created)
            } catch DeviceRegistrationError.installationMismatch {
                throw HTTPError(403, installationMismatchCode, "this token is registered to another installation")
            } catch DeviceRegistrationError.sessionEnded {
                throw HTTPError(401, "session_ended", "the session has ended; sign in again")
            } catch DeviceRegistrationError.sessionConflict {
                throw HTTPError(409, "session_conflict", "this token's sid names another user's session of this app; give every sign-in a sid unique across the app's users")
            }
        }
    }

    /// A browser subscription as the `webpush` token (`WebPushSubscription`): each field checked
    /// and named in the 400 (`subscription.endpoint`, `subscription.keys.p256dh`, `…auth`).
    private func webPushToken(_ body: SubscriptionBody, given token: String?, provider: PushProviderID) throws(HTTPError) -> String {
        guard provider == .webpush else {
            throw HTTPError.invalid("subscription", "subscription is for provider webpush (platform web)")
        }
        guard token == nil else { throw HTTPError.invalid("token", "send either token or subscription, not both") }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(endpoint: body.endpoint, p256dh: body.keys.p256dh, auth: body.keys.auth,
                                                   allowLoopbackHTTP: webPushAllowHTTP, allowPrivateHosts: webPushAllowPrivate)
        } catch {
            throw HTTPError(400, error.code, error.message, field: error.field)
        }
        do {
            return try providers.validate(token: subscription.token, for: .webpush)
        } catch {
            throw HTTPError.invalid(error.field ?? "subscription", error.message)
        }
    }

    /// The token as its provider's rule stores it, or the rule's own message as a 400 on `token`.
    private func validToken(_ token: String, provider: PushProviderID) throws(HTTPError) -> String {
        do {
            return try providers.validate(token: token, for: provider)
        } catch {
            throw HTTPError.invalid("token", error.message)
        }
    }

    /// An FCM registration token's shape: `<instance id>:<base64url>` (e.g. `fXk…:APA91b…`),
    /// long, never hex only. Only a hint for the error message; FCM's own rule stays opaque.
    static func looksLikeFCMToken(_ token: String) -> Bool {
        let utf8 = token.utf8
        guard (64...4096).contains(utf8.count), let colon = utf8.firstIndex(of: UInt8(ascii: ":")),
              colon != utf8.startIndex, utf8.index(after: colon) != utf8.endIndex else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"): return true
            default: return false
            }
        }
    }

    /// The compatibility routes' provider for a token: Expo for `ExponentPushToken[…]` /
    /// `ExpoPushToken[…]` (PU-8a; one that only starts like it too, so Expo's rule refuses it),
    /// else FCM, as those apps have always registered.
    static func tokenProvider(_ token: String) -> PushProviderID {
        ExpoPushToken.hasExpoPrefix(token) ? .expo : .fcm
    }

    /// An optional printable text field, at most `max` characters.
    private static func text(_ value: String?, field: String, max: Int) throws(HTTPError) -> String? {
        guard let value else { return nil }
        // Unicode scalars, not Characters: combining marks must not let a "short" value store kilobytes.
        guard !value.isEmpty, value.unicodeScalars.count <= max,
              !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw HTTPError.invalid(field, "\(field) must be 1-\(max) printable characters")
        }
        return value
    }

    private static func locale(_ value: String?, field: String) throws(HTTPError) -> String? {
        guard let value else { return nil }
        guard let tag = LocaleTag(value) else { throw HTTPError.invalid(field, "\(field) must be a BCP 47 language tag such as pt-BR") }
        return tag.rawValue
    }
}
