import Realtime
import Storage

/// Builds the router of every HTTP route Herald serves (docs/api.md).
public enum HeraldAPI {
    /// - Parameters:
    ///   - configuration: credentials and limits.
    ///   - node: the realtime core the routes publish to and stream from.
    ///   - database: sessions and devices.
    ///   - sessions: ended sessions, loaded from `database` at start.
    ///   - push: delivery, when a provider has credentials (PU-6).
    ///   - notifier: the notifications choke point (NO-1); one with an empty catalog when nil.
    public static func router(configuration: APIConfiguration, node: RealtimeNode, database: Database,
                              sessions: SessionRegistry, push: PushService? = nil, notifier: Notifier? = nil) -> Router {
        let notifier = notifier ?? Notifier(database: database, node: node, push: push, catalog: .empty)
        var router = Router()
        let authenticator = Authenticator(configuration: configuration, sessions: sessions)
        let responder = DatabaseResponder(database: database)
        let toucher = SessionToucher(database: database)
        OperationsRoutes(node: node, database: database, push: push, providers: configuration.pushProviders, notifier: notifier).register(in: &router)
        router.get("/openapi.json") { _ in .response(.json(200, OpenAPIDocument.json)) }
        let streams = StreamRoutes(authenticator: authenticator, configuration: configuration, sessions: toucher)
        streams.register(in: &router)
        WebSocketRoutes(authenticator: authenticator, streams: streams, echoEnabled: configuration.webSocketEcho).register(in: &router)
        let presenceRoutes = PresenceRoutes(authenticator: authenticator, presence: node.presence)
        presenceRoutes.register(in: &router)
        PublishRoutes(authenticator: authenticator, configuration: configuration, broker: node.broker).register(in: &router)
        DeviceRoutes(authenticator: authenticator, responder: responder, providers: configuration.pushProviders).register(in: &router)
        SessionRoutes(authenticator: authenticator, responder: responder, registry: sessions, node: node).register(in: &router)
        JobRoutes(authenticator: authenticator, responder: responder).register(in: &router)
        PushRoutes(authenticator: authenticator, responder: responder, push: push).register(in: &router)
        let notificationRoutes = NotificationRoutes(authenticator: authenticator, configuration: configuration, responder: responder,
                                                    notifier: notifier, presence: node.presence, push: push)
        notificationRoutes.register(in: &router)
        InboxRoutes(authenticator: authenticator, database: database, broker: node.broker,
                    renderer: NotificationRenderer(catalog: notifier.catalog), catalog: notifier.catalog).register(in: &router)
        PreferenceRoutes(authenticator: authenticator, responder: responder, catalog: notifier.catalog).register(in: &router)
        MemberRoutes(authenticator: authenticator, responder: responder).register(in: &router)
        if let issuer = configuration.devIssuer {
            DevRoutes(issuer: issuer).register(in: &router)
            DemoRoutes(authenticator: authenticator, directory: configuration.webDemoDirectory, notifications: notificationRoutes,
                       presence: presenceRoutes, pushDouble: configuration.demoPushDouble).register(in: &router)
        }
        return router
    }
}
