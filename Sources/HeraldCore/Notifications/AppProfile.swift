/// What the choke point applies per app (SPEC AP-1, AP-4, AP-6, NO-5; ADR 0006): its kind catalog
/// (with the app's exclusions and default locale folded in) and how its pushes carry their data.
/// The `default` app's comes from the environment (`HERALD_CATALOG_PATH`,
/// `HERALD_PAYLOAD_ROOT_KEY`); a stored app's from its settings, rebuilt when they change.
///
/// A class of constants: a profile is handed to each call's validation and planning, and as a
/// struct each hand-over copied its catalog three times over (its own, the planner's and the
/// renderer's), a retain and a release of every string and table in it (issue 17: ~37 of each a
/// notification at the choke point).
public final class AppProfile: Sendable {
    /// The app's id (`default`, or a stored app's).
    public let app: String
    /// Kinds, categories, exclusions and the default locale.
    public let catalog: NotificationCatalog
    /// Flat data keys, or everything under one root key (AP-4).
    public let payload: PayloadOptions
    package let planner: PushPlanner
    /// Renders the app's texts (pushes, inbox).
    public let renderer: NotificationRenderer

    /// - Parameters:
    ///   - app: the app's id.
    ///   - catalog: its kinds; `.empty` when it has none.
    ///   - payload: its payload options; `.flat` by default.
    public init(app: String, catalog: NotificationCatalog, payload: PayloadOptions = .flat) {
        self.app = app
        self.catalog = catalog
        self.payload = payload
        planner = PushPlanner(catalog: catalog)
        renderer = NotificationRenderer(catalog: catalog)
    }
}
