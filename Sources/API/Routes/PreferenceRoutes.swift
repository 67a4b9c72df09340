import HeraldCore
import Realtime

/// Push preferences (NO-4): per scope (`/v1/scopes/{scope}/…`, alias `/v1/stores/{id}/…` for
/// scope `store:{id}`, seed 001) and the user's global switch (seed 002). They apply to every
/// device of the user; the planner reads them for each notification.
struct PreferenceRoutes {
    let authenticator: Authenticator
    let responder: DatabaseResponder
    /// Each app's catalog names the kinds its preferences may hold.
    let notifier: Notifier

    struct ScopeBody: JSONBody {
        let is_enabled: Bool
        let enabled_events: [String]?

        static let members = BodyMembers.fields("is_enabled", "enabled_events")
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.getPushPreferences) { context in try routes.get(context, scope: context.pathParameters["scope"]) }
        table.on(Spec.putPushPreferences) { context in try routes.put(context, scope: context.pathParameters["scope"]) }
        table.on(Spec.getStorePushPreferences) { context in try routes.get(context, scope: Self.storeScope(context)) }
        table.on(Spec.putStorePushPreferences) { context in try routes.put(context, scope: Self.storeScope(context)) }
        table.on(Spec.getGlobalPushPreferences) { context in try routes.get(context, scope: nil) }
        table.on(Spec.putGlobalPushPreferences) { context in try routes.put(context, scope: nil) }
    }

    /// Seed 001's stores are scopes named `store:{store_id}`.
    private static func storeScope(_ context: RequestContext) -> String? {
        context.pathParameters["store_id"].map { "store:" + $0 }
    }

    private func checked(_ scope: String?) throws(HTTPError) -> String? {
        guard let scope else { return nil }
        guard NotificationRequest.isName(scope, max: 200) else {
            throw HTTPError.invalid("scope", "scope must be 1-200 characters of A-Z a-z 0-9 _ - . :")
        }
        return scope
    }

    /// `GET …/push-preferences` → `{scope, is_enabled, enabled_events, available_events, is_default}`.
    func get(_ context: RequestContext, scope rawScope: String?) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let app = claims.app.rawValue
        let scope = try checked(rawScope)
        let catalog = notifier.profile(app).catalog
        return responder.read { tx in
            let saved = try tx.preferences.find(app: app, userID: claims.subject, scope: scope)
            let available = try Self.available(tx, catalog: catalog, app: app, userID: claims.subject, scope: scope)
            return .json(200, Self.json(scope: scope, saved: saved, available: available, catalog: catalog))
        }
    }

    /// `PUT …/push-preferences {is_enabled, enabled_events?}`; unknown kinds → 400, nothing saved.
    func put(_ context: RequestContext, scope rawScope: String?) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let app = claims.app.rawValue
        let catalog = notifier.profile(app).catalog
        let scope = try checked(rawScope)
        let body = try RequestBody.decode(ScopeBody.self, from: context.request)
        var events: [String]?
        if let given = body.enabled_events {
            guard given.count <= 500 else { throw HTTPError.invalid("enabled_events", "at most 500 kinds") }
            for kind in given {
                guard NotificationRequest.isName(kind), catalog.kinds.isEmpty || catalog.kind(kind) != nil else {
                    throw HTTPError.invalid("enabled_events", "'\(kind)' is not a notification kind of this app")
                }
            }
            events = Array(Set(given)).sorted()
        }
        let record = PushPreferenceRecord(app: app, userID: claims.subject, scope: scope, isEnabled: body.is_enabled, enabledEvents: events,
                                          updatedAt: unixMilliseconds())
        return responder.write { tx in
            try tx.preferences.save(record)
            let available = try Self.available(tx, catalog: catalog, app: app, userID: claims.subject, scope: scope)
            return .json(200, Self.json(scope: scope, saved: record, available: available, catalog: catalog))
        }
    }

    /// Kinds the user may receive in `scope`: those whose `requires` their membership holds (for
    /// the global switch: every kind preferences govern).
    private static func available(_ tx: any StorageTransaction, catalog: NotificationCatalog, app: String, userID: String,
                                  scope: String?) throws -> [NotificationKind] {
        // The global switch governs every kind a preference can name, whatever the scope permissions.
        guard let scope else {
            return catalog.kinds.values.filter { $0.inPreferences && !catalog.excludes(audience: $0.audience) && !catalog.exclusions.kinds.contains($0.name) }.sorted { $0.name < $1.name }
        }
        let member = try tx.members.find(app: app, scope: scope, userID: userID)
        return catalog.availableKinds(permissions: Set(member?.permissions ?? []))
    }

    /// The answer of GET and PUT. `enabled_events` is what a PUT of the same body keeps: the saved
    /// list; else, with a catalog, the kinds on by default here; else `null`, "every kind" (without
    /// a catalog there is no list of defaults, and `[]` is a saved list that pushes nothing).
    static func json(scope: String?, saved: PushPreferenceRecord?, available: [NotificationKind], catalog: NotificationCatalog) -> String {
        let enabled = saved?.enabledEvents ?? (catalog.kinds.isEmpty ? nil : available.filter(\.defaultEnabled).map(\.name))
        return "{\"scope\":\(scope.map(JSONText.quote) ?? "null"),\"is_enabled\":\(saved?.isEnabled ?? true),"
            + "\"enabled_events\":\(enabled.map(JSONText.array) ?? "null"),\"available_events\":\(JSONText.array(available.map(\.name))),"
            + "\"is_default\":\(saved == nil)}"
    }
}
