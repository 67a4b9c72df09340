import Realtime

/// Builds the router of every HTTP route Herald serves (docs/api.md).
public enum HeraldAPI {
    /// - Parameters:
    ///   - configuration: credentials and limits.
    ///   - node: the realtime core the routes publish to and stream from.
    public static func router(configuration: APIConfiguration, node: RealtimeNode) -> Router {
        var router = Router()
        let authenticator = Authenticator(configuration: configuration)
        router.get("/healthz") { _ in .response(.json(200, "{\"status\":\"ok\"}")) }
        let streams = StreamRoutes(authenticator: authenticator, configuration: configuration)
        streams.register(in: &router)
        WebSocketRoutes(authenticator: authenticator, streams: streams, echoEnabled: configuration.webSocketEcho).register(in: &router)
        PresenceRoutes(authenticator: authenticator, presence: node.presence).register(in: &router)
        PublishRoutes(authenticator: authenticator, configuration: configuration, broker: node.broker).register(in: &router)
        if let issuer = configuration.devIssuer {
            DevRoutes(issuer: issuer).register(in: &router)
        }
        return router
    }
}
