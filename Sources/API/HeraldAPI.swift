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
    public static func router(configuration: APIConfiguration, node: RealtimeNode, database: Database,
                              sessions: SessionRegistry, push: PushService? = nil) -> Router {
        var router = Router()
        let authenticator = Authenticator(configuration: configuration, sessions: sessions)
        let responder = DatabaseResponder(database: database)
        let toucher = SessionToucher(database: database)
        OperationsRoutes(node: node, database: database, push: push).register(in: &router)
        router.get("/openapi.json") { _ in .response(.json(200, OpenAPIDocument.json)) }
        let streams = StreamRoutes(authenticator: authenticator, configuration: configuration, sessions: toucher)
        streams.register(in: &router)
        WebSocketRoutes(authenticator: authenticator, streams: streams, echoEnabled: configuration.webSocketEcho).register(in: &router)
        PresenceRoutes(authenticator: authenticator, presence: node.presence).register(in: &router)
        PublishRoutes(authenticator: authenticator, configuration: configuration, broker: node.broker).register(in: &router)
        DeviceRoutes(authenticator: authenticator, responder: responder).register(in: &router)
        SessionRoutes(authenticator: authenticator, responder: responder, registry: sessions, node: node).register(in: &router)
        JobRoutes(authenticator: authenticator, responder: responder).register(in: &router)
        PushRoutes(authenticator: authenticator, responder: responder, push: push).register(in: &router)
        if let issuer = configuration.devIssuer {
            DevRoutes(issuer: issuer).register(in: &router)
        }
        return router
    }
}
