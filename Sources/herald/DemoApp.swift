import API
import Foundation
import HeraldCore
import PushHTTP
import Realtime

/// Dev mode's second app (issue 14: "the demo can switch between two apps"). At start, dev mode
/// creates or updates the stored app `demo-b` so the web demo can switch to it with no setup:
/// its tokens verify with the public half of `DevAppKey` (derived from `HERALD_JWT_SECRET`, so no
/// `HERALD_SECRET_KEY` is needed and the key survives restarts), and it has its own small German
/// catalog, default locale `de` and payload root key `demo`, so what it shows differs visibly from
/// `default`. Only the members below are set; anything else changed through the admin API (CORS
/// origins, exclusions, push credentials, server keys) is kept.
///
/// Never runs outside dev mode. When the apps table cannot take the app (a storage adapter without
/// one, a write refused), the demo serves `default` alone and says so in the log.
enum DemoApp {
    /// The demo app's id.
    static let id = AppID("demo-b")!
    /// Its default locale: texts fall back to it when a device and user have none.
    static let defaultLocale = "de"
    /// Its push payload root key (AP-4).
    static let rootKey = "demo"

    /// The catalog: the demo page's kinds, with German texts only, so whatever the browser's or
    /// device's language (the inbox renders by `Accept-Language`), the switch shows.
    static let catalogJSON = #"""
    {"app":"demo-b","default_locale":"de",
     "categories":{"demo":{"android_channel_id":"demo","importance":"default","sound":"default","name":{"de":"Demo"}}},
     "kinds":{
      "demo.message":{"category":"demo",
       "title":{"de":"Deine Generierung ist fertig"},
       "body":{"de":"Tippe, um das Ergebnis zu sehen."}},
      "demo.shipped":{"category":"demo",
       "title":{"de":"Bestellung unterwegs"},
       "body":{"de":"Deine Bestellung wurde verschickt."}}}}
    """#

    /// What happened to the stored app at start.
    enum Outcome: String {
        case created, updated, unchanged
    }

    /// Creates or updates `demo-b` and makes it served.
    ///
    /// - Parameters:
    ///   - jwtSecret: the dev issuer's secret (`HERALD_JWT_SECRET`, generated in dev mode when unset).
    ///   - storage: the database; its apps table holds the app.
    ///   - service: installs the stored app in the directory (as after an admin change).
    /// - Returns: the signer of the app's dev tokens, or nil (logged) when the app is not available.
    static func setUp(jwtSecret: String, storage: any Storage, service: AppService) -> ES256Signer? {
        do {
            let signer = try DevAppKey.signer(secret: Array(jwtSecret.utf8), app: id)
            let publicKey = signer.publicKeyPEM()
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let outcome: Outcome
            do {
                outcome = try store(publicKey: publicKey, now: now, in: storage)
            } catch let error as StorageError where error.isDuplicateKey {
                // Another node of the cluster, starting at the same time, stored the app between
                // this one's read and its insert: it is there now, so bring it up to date instead.
                outcome = try store(publicKey: publicKey, now: now, in: storage)
            }
            try service.reload(id)
            Log.info("dev mode: demo app ready; POST /v1/dev/token with \"app\": \"demo-b\" mints its tokens",
                     ["app": id.rawValue, "stored": outcome.rawValue, "default_locale": defaultLocale, "root_key": rootKey,
                      "token_key": "ES256, derived from HERALD_JWT_SECRET"])
            return signer
        } catch {
            Log.warning("dev mode: the demo app is not available, the web demo serves the default app only",
                        ["app": id.rawValue, "error": "\(error)"])
            return nil
        }
    }

    /// Creates the app, or updates the members dev mode owns, in one unit of work.
    /// - Throws: `StorageError`; `.constraint(.unique` or `.primaryKey, …)` when another process
    ///   created it between the read and the insert.
    private static func store(publicKey: String, now: Int64, in storage: any Storage) throws -> Outcome {
        try storage.writeSync { tx -> Outcome in
            guard var record = try tx.apps.find(id) else {
                var settings = AppSettings()
                apply(publicKey: publicKey, to: &settings)
                try tx.apps.create(AppRecord(id: id, settings: settings, createdAt: now, updatedAt: now))
                return .created
            }
            let before = record.settings
            apply(publicKey: publicKey, to: &record.settings)
            guard record.settings != before else { return .unchanged }
            record.updatedAt = now
            _ = try tx.apps.update(record)
            return .updated
        }
    }

    /// Sets the members dev mode owns: token verification by the dev key, catalog, locale, root key.
    static func apply(publicKey: String, to settings: inout AppSettings) {
        settings.tokens.publicKeys = [publicKey]
        settings.tokens.algorithms = ["ES256"]
        settings.tokens.jwks = nil
        settings.tokens.userClaim = "sub"
        settings.tokens.sessionClaim = "sid"
        settings.catalogJSON = catalogJSON
        settings.defaultLocale = defaultLocale
        settings.payload.rootKey = rootKey
    }
}

extension StorageError {
    /// A unique or primary-key constraint refused an insert: the row exists (another process's).
    fileprivate var isDuplicateKey: Bool {
        if case .constraint(let kind, _) = self { return kind == .unique || kind == .primaryKey }
        return false
    }
}
