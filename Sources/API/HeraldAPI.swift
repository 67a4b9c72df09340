import HeraldCore
import Realtime

/// Builds the router of every HTTP route Herald serves (docs/api.md).
public enum HeraldAPI {
    /// - Parameters:
    ///   - configuration: credentials and limits.
    ///   - node: the realtime core the routes publish to and stream from.
    ///   - database: sessions and devices.
    ///   - sessions: ended sessions, loaded from `database` at start.
    ///   - push: delivery, when a provider has credentials (PU-6).
    ///   - notifier: the notifications choke point (NO-1); one with an empty catalog when nil.
    public static func router(configuration: APIConfiguration, node: RealtimeNode, database: any Storage,
                              sessions: SessionRegistry, push: PushService? = nil, notifier: Notifier? = nil) -> Router {
        routes(configuration: configuration, node: node, database: database, sessions: sessions, push: push, notifier: notifier).router
    }

    /// The routes of `router(…)` with the OpenAPI spec of each.
    static func routes(configuration: APIConfiguration, node: RealtimeNode, database: any Storage,
                       sessions: SessionRegistry, push: PushService? = nil, notifier: Notifier? = nil) -> RouteTable {
        let authenticator = Authenticator(configuration: configuration, sessions: sessions)
        let apps = authenticator.apps
        let notifier = notifier ?? Notifier(database: database, broker: node.broker, presence: node.presence, barrier: node,
                                            providers: push?.providers, catalog: .empty, profiles: { apps.profile($0) },
                                            pushQueued: push?.wakeWorker, worker: push?.worker)
        var table = RouteTable()
        let appService = configuration.appService
            ?? AppService(storage: database, directory: authenticator.apps, secretBox: nil, factory: nil, providers: nil)
        let appRoutes = AppRoutes(adminKey: configuration.adminKey.map { Array($0.utf8) }, service: appService)
        appRoutes.register(in: &table)
        let responder = DatabaseResponder(database: database)
        let toucher = SessionToucher(database: database)
        OperationsRoutes(node: node, database: database, push: push, providers: configuration.pushProviders, notifier: notifier,
                         probe: StorageProbe(storage: database), apps: appService,
                         retention: configuration.retentionMetrics, nodeIdentity: configuration.nodeIdentity).register(in: &table)
        let streams = StreamRoutes(authenticator: authenticator, configuration: configuration, sessions: toucher)
        streams.register(in: &table)
        WebSocketRoutes(authenticator: authenticator, streams: streams, echoEnabled: configuration.webSocketEcho,
                        storage: database).register(in: &table)
        let presenceRoutes = PresenceRoutes(authenticator: authenticator, presence: node.presence, storage: database)
        presenceRoutes.register(in: &table)
        PublishRoutes(authenticator: authenticator, configuration: configuration, broker: node.broker, pacer: node).register(in: &table)
        DeviceRoutes(authenticator: authenticator, responder: responder, providers: configuration.pushProviders,
                     webPushAllowHTTP: configuration.webPushAllowHTTP, webPushAllowPrivate: configuration.webPushAllowPrivate).register(in: &table)
        SessionRoutes(authenticator: authenticator, responder: responder, registry: sessions, node: node).register(in: &table)
        JobRoutes(authenticator: authenticator, responder: responder).register(in: &table)
        PushRoutes(authenticator: authenticator, responder: responder, push: push,
                   notifier: notifier).register(in: &table)
        let notificationRoutes = NotificationRoutes(authenticator: authenticator, configuration: configuration, responder: responder,
                                                    notifier: notifier, presence: node.presence, push: push)
        notificationRoutes.register(in: &table)
        InboxRoutes(authenticator: authenticator, database: database, broker: node.broker, notifier: notifier).register(in: &table)
        PreferenceRoutes(authenticator: authenticator, responder: responder, notifier: notifier).register(in: &table)
        MemberRoutes(authenticator: authenticator, responder: responder).register(in: &table)
        UserRoutes(authenticator: authenticator, responder: responder).register(in: &table)
        if let issuer = configuration.devIssuer {
            DevRoutes(issuer: issuer, appSigners: configuration.devAppSigners, apps: configuration.apps).register(in: &table)
            DemoRoutes(authenticator: authenticator, directory: configuration.webDemoDirectory, notifications: notificationRoutes,
                       presence: presenceRoutes, pushDouble: configuration.demoPushDouble).register(in: &table)
        } else {
            table.document(DevRoutes.Spec.all + DemoRoutes.Spec.all)
        }
        // A client that waits for `100 Continue` learns of a missing or wrong credential before it
        // sends the body (RFC 9110 §10.1.1).
        table.checkHeads { spec in
            func refusal(_ check: @escaping @Sendable (RequestContext) throws(HTTPError) -> Void) -> Router.HeadCheck {
                { context in
                    do throws(HTTPError) { try check(context) } catch { return error.response }
                    return nil
                }
            }
            switch spec.auth {
            case .serverKey: return refusal { context throws(HTTPError) in try authenticator.server(context) }
            case .accessToken: return refusal { context throws(HTTPError) in _ = try authenticator.client(context, now: unixSeconds()) }
            case .adminKey: return refusal { context throws(HTTPError) in try appRoutes.admin(context) }
            case .none, .accessTokenOrFirstMessage: return nil
            }
        }
        // Last, so the document holds every route declared above.
        table.serveDocument(OperationsRoutes.Spec.openapi)
        return table
    }
}
