import API
import Dispatch
import Foundation
import HeraldCore
import PushHTTP
import Realtime

/// `herald send-test`: one push, sent now with the environment's credentials, and the provider's
/// answer printed as one JSON line (PU-6). For operators checking keys, topics and tokens.
enum SendTest {
    static func run(arguments: [String]) -> Int32 {
        var options: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let name = arguments[index]
            guard name.hasPrefix("--"), index + 1 < arguments.count else {
                return usage("expected --name value pairs, got '\(name)'")
            }
            options[String(name.dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        let known: Set<String> = ["device-token", "platform", "provider", "environment", "title", "body", "locale"]
        if let unknown = options.keys.first(where: { !known.contains($0) }) { return usage("unknown option --\(unknown)") }
        guard let token = options["device-token"], !token.isEmpty else { return usage("--device-token is required") }
        guard let platform = options["platform"].flatMap(DevicePlatform.init(rawValue:)) else {
            return usage("--platform must be ios, android or web")
        }
        // The provider registration would give the token (docs/api.md, `provider`'s default).
        let byPlatform = platform.provider(forToken: token)
        let chosen = options["provider"].map { PushProviderID(rawValue: $0) } ?? byPlatform
        guard let provider = chosen, PushSetup.adapters.contains(where: { $0.id == provider }) else {
            return usage("--provider must be apns, fcm, webpush or expo")
        }
        // What registration would refuse is a usage error here too, not a push sent otherwise
        // than asked (a typo in --environment reached the production gateway, whose
        // BadDeviceToken then blamed a good sandbox token).
        guard platform.accepts(provider) else {
            return usage("--provider \(provider.rawValue) cannot deliver to platform \(platform.rawValue)")
        }
        var gateway = APNsEnvironment.production
        if let raw = options["environment"] {
            guard provider == .apns else {
                return usage("--environment is for APNs tokens (--provider apns); \(provider.rawValue) picks its gateway itself")
            }
            guard let chosenGateway = APNsEnvironment(rawValue: raw) else {
                return usage("--environment must be sandbox or production, got '\(raw)'")
            }
            gateway = chosenGateway
        }
        var locale: String?
        if let raw = options["locale"] {
            guard let tag = LocaleTag(raw) else { return usage("--locale must be a BCP 47 language tag such as pt-BR, got '\(raw)'") }
            locale = tag.rawValue
        }
        // A Web Push token is the stored subscription form (`<endpoint>#p256dh=…&auth=…`, as
        // `GET /v1/me/devices` answers at registration) and an Expo token `ExponentPushToken[…]`:
        // checked here so a typo is a usage error, not a push the provider refuses.
        if provider == .webpush || provider == .expo {
            do {
                _ = try PushProviders(adapters: PushSetup.adapters).validate(token: token, for: provider)
            } catch {
                return usage("--device-token: \(error.message)")
            }
        }
        guard let settings = Herald.loadSettings() else { return 2 }
        Log.bootstrap(level: settings.logLevel, format: settings.logFormat)

        let environment = ProcessInfo.processInfo.environment
        let credentials = PushSetup.credentials(environment: environment, webPushAllowHTTP: settings.webPushAllowHTTP,
                                                webPushAllowPrivate: settings.webPushAllowPrivate)
        let client: PushClients
        do {
            client = try PushClients(configuration: .fromEnvironment(environment))
        } catch {
            Console.error("herald: the HTTP/2 client could not start: \(error)\n")
            return 1
        }
        defer { client.shutdown() }
        let providers = PushSetup.providers(credentials, clients: client)
        guard providers.isConfigured(provider) else {
            Console.error("herald: \(provider) has no usable credentials (see herald --help)\n")
            return 2
        }
        // The same push the device test route sends (kind key, catalog texts), so what an operator
        // checks here is what a phone gets there; --title and --body override the texts.
        var catalog = NotificationCatalog.empty
        if let path = settings.catalogPath {
            do {
                catalog = try NotificationCatalog.load(path: path)
            } catch {
                Console.error("herald: HERALD_CATALOG_PATH '\(path)': \(error.message)\n")
                return 2
            }
        }
        var notification = TestPush.notification(catalog: catalog, deviceLocale: locale)
        if let title = options["title"] { notification.title = title }
        if let body = options["body"] { notification.body = body }
        notification.rootKey = settings.payload.rootKey
        let target = PushTarget(provider: provider, token: token,
                                environment: provider == .apns ? gateway.rawValue : nil)
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        providers.send(notification, to: target, pushID: .random()) { classification in
            result.set(classification)
            done.signal()
        }
        guard done.wait(timeout: .now() + 60) == .success, let classification = result.get() else {
            Console.output("{\"outcome\":\"timeout\"}\n")
            return 1
        }
        let (outcome, detail): (String, String?) = {
            switch classification.outcome {
            case .delivered(let id): return ("delivered", id)
            case .deleteDevice(let reason, _): return ("token_invalid", reason)
            case .retry(_, let reason), .refreshAuthAndRetryOnce(let reason), .notSent(_, let reason), .busy(let reason):
                return ("retryable_error", reason)
            case .deadLetter(let reason): return ("rejected", reason)
            case .expired: return ("expired", "expired")
            }
        }()
        let answered = Console.output("{\"provider\":\(JSONText.quote(provider.rawValue)),\"outcome\":\"\(outcome)\",\"status\":\(classification.status.map(String.init) ?? "null"),"
            + "\"detail\":\(detail.map(JSONText.quote) ?? "null")}\n")
        return outcome == "delivered" && answered ? 0 : 1
    }

    private static func usage(_ message: String) -> Int32 {
        Console.error("herald send-test: \(message)\nusage: herald send-test --device-token T --platform ios|android|web [--provider apns|fcm|webpush|expo] [--environment sandbox|production] [--locale L] [--title T] [--body B]\n")
        return 2
    }

    /// The provider's answer, handed from its thread to the waiting one.
    private final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var value: PushClassification?
        func set(_ v: PushClassification) { lock.lock(); value = v; lock.unlock() }
        func get() -> PushClassification? { lock.lock(); defer { lock.unlock() }; return value }
    }
}
