import API
import COpenSSLShim
import Foundation
import Glibc
import HeraldCore
import PushHTTP
import Realtime
import RealtimeMemory
import RealtimeRedis
import StorageSQLite

/// The `herald` command: `serve` (default), `migrate`, `send-test`, `jobs retry`, `vapid generate` and `--help`.
@main
enum Herald {
    static func main() {
        // Before the first line: a write to a pipe whose reader left (a log shipper, `| head`)
        // fails with EPIPE, dropped by LogSink, instead of killing the process with SIGPIPE
        // before it could exit with the status that says why it stopped.
        signal(SIGPIPE, SIG_IGN)
        Console.keepStandardDescriptors()
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `serve` and `migrate` read only the environment: a word after them is a typo or a
        // misplaced setting, and running anyway would hide it (exit 2, as for an unknown command).
        // A user asking for help there (`herald serve --help`) gets it, not a refusal.
        if let command = arguments.first, ["serve", "migrate"].contains(command), arguments.count == 2,
           helpWords.contains(arguments[1]) {
            exit(Console.output(Settings.helpText) ? 0 : 1)
        }
        if let command = arguments.first, ["serve", "migrate"].contains(command), arguments.count > 1 {
            Console.error("herald: '\(command)' takes no arguments (got '\(arguments[1])'); settings are environment variables, see herald --help\n")
            exit(2)
        }
        switch arguments.first {
        case nil, "serve":
            exit(serve())
        case "migrate":
            exit(migrate())
        case "send-test":
            exit(SendTest.run(arguments: Array(arguments.dropFirst())))
        case "jobs":
            exit(JobsCommand.run(arguments: Array(arguments.dropFirst())))
        case "vapid":
            exit(VAPIDCommand.run(arguments: Array(arguments.dropFirst())))
        case let word? where helpWords.contains(word):
            exit(Console.output(Settings.helpText) ? 0 : 1)
        default:
            Console.error("herald: unknown command '\(arguments[0])'\n\n\(Settings.helpText)")
            exit(2)
        }
    }

    /// The words that ask for `Settings.helpText`.
    static let helpWords: Set<String> = ["--help", "-h", "help"]

    static func loadSettings() -> Settings? {
        do {
            return try Settings(environment: ProcessInfo.processInfo.environment)
        } catch {
            Console.error("herald: \(error)\n")
            return nil
        }
    }

    /// `herald migrate`: applies the missing schema migrations and exits.
    private static func migrate() -> Int32 {
        guard let settings = loadSettings() else { return 2 }
        Log.bootstrap(level: settings.logLevel, format: settings.logFormat)
        // Not under a running server (ADR 0017): its schema would change beneath it.
        let locked = StorageSetup.lockOrExitStatus(settings)
        if let refused = locked.refused { return refused }
        defer { locked.lock?.release() }
        do {
            let applied = try StorageSetup.migrate(settings)
            Log.info("database migrated", ["database": StorageSetup.displayName(settings.databasePath),
                                           "applied": applied.map(String.init).joined(separator: ",").ifEmpty("none")])
            return 0
        } catch {
            Console.error("herald: HERALD_DATABASE '\(StorageSetup.displayName(settings.databasePath))': \(error)\n")
            return 1
        }
    }

    /// The first setting that makes this process call OpenSSL's TLS or keys (push, a public
    /// verification key, sealed app secrets, the dev app's ES256 key), or nil when none does.
    /// HS256 tokens, server keys, WebSocket handshakes and Redis script names are hashed with
    /// OpenSSL's low-level digests (`Digests`), which open libcrypto at their first use, not here:
    /// the embedded default maps no OpenSSL at start (issue 17).
    private static func openSSLSetting(_ settings: Settings, environment: [String: String]) -> String? {
        if settings.jwtPublicKeyPEM != nil { return settings.jwtPublicKeySource ?? "HERALD_JWT_PUBLIC_KEY" }
        if settings.adminKey != nil { return "HERALD_ADMIN_KEY" }
        if settings.secretBox != nil { return "HERALD_SECRET_KEY" }
        if settings.dev { return "HERALD_DEV" }
        let push = ["APNS_", "FCM_", "HERALD_EXPO_", "HERALD_VAPID_"]
        if let name = environment.keys.sorted().first(where: { key in push.contains { key.hasPrefix($0) } }) { return name }
        return nil
    }

    private static func serve() -> Int32 {
        guard let settings = loadSettings() else { return 2 }
        Log.bootstrap(level: settings.logLevel, format: settings.logFormat)
        // Before the loops allocate: a peak's memory goes back once it has passed (issue 17).
        HeapTrimmer.pinAllocatorThresholds(environment: ProcessInfo.processInfo.environment)

        // libssl and libcrypto are opened on first use (COpenSSLShim): a setting that uses them
        // checks here, so that a missing library stops the start with its reason.
        if let setting = openSSLSetting(settings, environment: ProcessInfo.processInfo.environment),
           let reason = herald_openssl_load() {
            Console.error("herald: \(setting) needs OpenSSL: \(String(cString: reason))\n")
            return 2
        }

        var keys: [VerificationKey] = []
        var issuer: AccessTokenIssuer?
        do {
            if let secret = settings.jwtSecret {
                keys.append(try VerificationKey.hmac(secret: Array(secret.utf8)))
                if settings.dev { issuer = AccessTokenIssuer(secret: Array(secret.utf8)) }
            }
        } catch {
            Console.error("herald: HERALD_JWT_SECRET is unusable: \(error.message)\n")
            return 2
        }
        do {
            if let pem = settings.jwtPublicKeyPEM {
                keys.append(try VerificationKey.publicKey(pem: pem))
            }
        } catch {
            let source = settings.jwtPublicKeySource ?? "HERALD_JWT_PUBLIC_KEY"
            Console.error("herald: \(source) is unusable: \(error.message)\n")
            return 2
        }
        if keys.isEmpty {
            Log.warning("no access-token key configured (HERALD_JWT_SECRET or HERALD_JWT_PUBLIC_KEY): every client request will be refused")
        }

        // Block the stop signals before any thread starts, so every thread inherits the mask and
        // the main thread alone receives them through sigwait.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        // libhiredis and libcurl are opened on first use, not at exec (CDynamicLoad): a setting that
        // needs one checks it here, so a missing library stops the start with its reason.
        if let endpoint = settings.brokerEndpoint {
            do {
                try RedisLibrary.load()
            } catch {
                Console.error("herald: HERALD_BROKER needs libhiredis: \(error)\n")
                return 2
            }
            // A database Redis refuses never becomes reachable: the configuration is wrong, so the
            // start stops (exit 2) rather than leave a node that is never ready. Redis not
            // answering may pass (it may start after this node): that node starts, not ready.
            do {
                if let memory = try endpoint.check(connectTimeoutMilliseconds: 2_000), memory.mayEvict {
                    // Eviction takes channel history, meta or the stream sequence from under the
                    // resume guarantees; Herald cannot stop it, so the operator hears it at start.
                    Log.warning("Redis may evict Herald's keys when it reaches maxmemory: resumes may then get a reset, or a history lost to eviction may go unnoticed; set maxmemory-policy noeviction (operations.md, Several nodes)",
                                ["redis": endpoint.description, "maxmemory": String(memory.maxmemoryBytes), "maxmemory_policy": memory.policy])
                }
            } catch .databaseRefused(let database, let reason) {
                Console.error("herald: HERALD_BROKER '\(endpoint)': Redis refuses database \(database) (\(reason)): "
                    + "use one its `databases` setting has (0-15 by default), e.g. redis://\(endpoint.authority)/0\n")
                return 2
            } catch {
                Log.warning("Redis does not answer at start: not ready until it does", ["redis": endpoint.description, "error": "\(error)"])
            }
        }

        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(count: settings.loops)
        } catch {
            Log.error("cannot create event loops", ["error": "\(error)"])
            return 1
        }
        // One server per SQLite file (ADR 0017), before the file is opened or migrated: held until
        // the process ends.
        if let refused = StorageSetup.lockOrExitStatus(settings).refused { return refused }
        // SQLite for a path, PostgreSQL for a postgres:// URL (StorageSetup).
        let opened: StorageSetup.Opened
        let sessions: SessionRegistry
        do {
            opened = try StorageSetup.open(settings)
            sessions = SessionRegistry(ended: try opened.storage.readSync { try $0.sessions.endedSessions() })
        } catch {
            Console.error("herald: HERALD_DATABASE '\(StorageSetup.displayName(settings.databasePath))': \(error)\n")
            return 2
        }
        // Before anything reads or releases jobs leased under the id (ADR 0016).
        let identity: NodeIdentityLease?
        do {
            identity = try NodeIdentitySetup.claim(settings, postgres: opened.postgres)
        } catch {
            Console.error("herald: \(error)\n")
            if case .held = error { return NodeIdentitySetup.heldExitStatus }
            return 2
        }
        identity?.start()
        // A start refused later gives the id up too (a second release does nothing).
        defer { identity?.release() }
        if let shortfall = StorageSetup.volumeShortfall(opened) {
            Log.warning(StorageSetup.volumeShortfallWarning,
                        ["database": settings.databasePath, "free_bytes": String(shortfall.freeBytes),
                         "wal_limit_bytes": String(shortfall.walLimitBytes)])
        }
        let database = opened.storage
        // What callers reach storage through (routes, notifications, apps): a stalled database
        // answers them 503 after HERALD_STORAGE_WAIT_SECONDS, and /readyz within 2 s, instead of
        // hanging with it. Background work (delivery, purge) waits on the database itself.
        let calls = BoundedStorage(database, waitMilliseconds: settings.storageWaitSeconds * 1_000, probeWaitMilliseconds: 2_000)
        // The one place adapters are chosen: in-process broker and presence (one node), or Redis
        // shared by the nodes of a cluster (HERALD_BROKER, SC-1).
        let cluster = settings.brokerEndpoint.map { Cluster(settings: settings, endpoint: $0) }
        let broker: any Broker = cluster?.broker
            ?? MemoryBroker(limits: MemoryBroker.Limits(historySize: settings.historySize, historyTTLSeconds: settings.historyTTLSeconds,
                                                      retainedTTLSeconds: settings.retainedTTLSeconds))
        let presence: any PresenceStore = cluster?.presence ?? MemoryPresenceStore(leaseSeconds: settings.foregroundLeaseSeconds)
        let node = RealtimeNode(group: group, broker: broker, presence: presence)
        cluster?.connect(node: node, sessions: sessions, storage: database)
        var apiConfiguration = APIConfiguration(serverKey: settings.serverKey, verificationKeys: keys, devIssuer: issuer)
        apiConfiguration.maxDataBytes = settings.maxDataBytes
        apiConfiguration.webSocketEcho = settings.webSocketEcho
        let notificationRetention = NotificationRetention(days: settings.notificationRetentionDays)
        apiConfiguration.retentionMetrics = notificationRetention.metrics
        apiConfiguration.nodeIdentity = identity
        let environment = ProcessInfo.processInfo.environment
        apiConfiguration.webDemoDirectory = settings.webDemoDirectory
        if let url = settings.demoDoubleURL {
            apiConfiguration.demoPushDouble = DemoPushDouble(baseURL: url, caFile: HTTP2Client.Configuration.fromEnvironment(environment).caFile)
        }
        let pushCredentials = PushSetup.credentials(environment: environment, webPushAllowHTTP: settings.webPushAllowHTTP,
                                                    webPushAllowPrivate: settings.webPushAllowPrivate)
        var pushProviders = PushSetup.providers(pushCredentials, clients: nil)
        var push: PushService?
        var pushClient: PushClients?
        // One worker claims every job this process queues only on SQLite (a cluster's nodes share
        // PostgreSQL's queue): only there can the API wait for its own worker (issue 17).
        let pushBacklog = opened.postgres == nil && settings.pushBacklogLimit > 0 ? PushBacklog(limit: settings.pushBacklogLimit) : nil
        var pushClientConfiguration: HTTP2Client.Configuration?
        // With the admin API on, a stored app may bring credentials later: the client and worker run.
        if !pushCredentials.isEmpty || settings.adminKey != nil {
            // Only Expo and Web Push send through libcurl (APNs and FCM through the native client):
            // it is opened here only for them, so that a missing library stops the start with its
            // reason, and otherwise on a stored app's first Expo or Web Push send (issue 17: libcurl
            // and its gnutls/krb5/ldap chain are ~4 MB of RSS).
            if pushCredentials.expo != nil || pushCredentials.vapid != nil {
                do {
                    try HTTP2Client.loadLibrary()
                } catch {
                    let setting = pushCredentials.expo != nil ? "HERALD_EXPO_* (Expo)" : "HERALD_VAPID_* (Web Push)"
                    Console.error("herald: \(setting) needs libcurl: \(error)\n")
                    return 2
                }
            }
            do {
                var clientConfiguration = HTTP2Client.Configuration.fromEnvironment(environment)
                var workerConfiguration = DeliveryWorker.Configuration()
                clientConfiguration.maxHostConnections = settings.pushMaxConnections
                // Spread the worker's pushes in flight over every allowed connection (Apple advises
                // several connections for volume) instead of filling the first one up to the
                // provider's stream limit before a second is opened.
                clientConfiguration.maxConcurrentStreams = max(1, (workerConfiguration.maxInFlight + settings.pushMaxConnections - 1)
                                                                    / settings.pushMaxConnections)
                pushClientConfiguration = clientConfiguration
                let client = try PushClients(configuration: clientConfiguration)
                pushProviders = PushSetup.providers(pushCredentials, clients: client)
                workerConfiguration.retry = settings.retryPolicy
                workerConfiguration.receiptDelayMilliseconds = Int64(settings.receiptDelayMilliseconds)
                workerConfiguration.receiptRecheckMilliseconds = Int64(settings.receiptRecheckMilliseconds)
                workerConfiguration.leaseMilliseconds = Int64(settings.pushLeaseSeconds) * 1_000
                // The worker asks presence itself whether an `unless_acked` push was acknowledged (NO-2).
                let worker = DeliveryWorker(storage: database, providers: pushProviders, presence: node.presence,
                                            configuration: workerConfiguration, log: PushSetup.log, backlog: pushBacklog)
                worker.start()
                // Jobs another node enqueued wake this one's worker too (PostgreSQL LISTEN/NOTIFY).
                opened.postgres?.listenForJobs { worker.wake() }
                push = PushService(providers: pushProviders, worker: worker)
                pushClient = client
            } catch {
                Log.error("push notifications disabled: the HTTP/2 client could not start", ["error": "\(error)"])
            }
        }
        apiConfiguration.pushProviders = pushProviders
        // Before the directory: the `default` app's entry carries it.
        apiConfiguration.vapidPublicKey = pushCredentials.vapid?.publicKeyBase64URL
        // Apps (ADR 0006): the environment is `default`; stored apps are loaded now, and the
        // admin API changes them while the server runs.
        let apps = AppDirectory(configuration: apiConfiguration)
        apiConfiguration.apps = apps
        apiConfiguration.adminKey = settings.adminKey
        let appFactory = AppPushSetup(environment: environment, clientConfiguration: pushClient == nil ? nil : pushClientConfiguration,
                                      webPushAllowHTTP: settings.webPushAllowHTTP, webPushAllowPrivate: settings.webPushAllowPrivate)
        let appService = AppService(storage: calls, directory: apps, secretBox: settings.secretBox, factory: appFactory,
                                    providers: pushProviders, leewaySeconds: apiConfiguration.leewaySeconds,
                                    closeStreams: { app in
                                        node.endApp(app.rawValue)
                                        // Its history and retained messages must not reach a new app of its id.
                                        do { try node.broker.removeChannels(app: app.rawValue) } catch {
                                            Log.warning("a deleted app's channels stay until they expire: the broker failed",
                                                        ["app": app.rawValue, "error": "\(error)"])
                                        }
                                    },
                                    revokeStreams: { app in node.endApp(app.rawValue, reason: .tokensChanged) },
                                    forgetPushState: { [worker = push?.worker] app in worker?.forgetApp(app.rawValue) })
        apiConfiguration.appService = appService
        do {
            let loaded = try appService.loadAll { message, metadata in
                Log.log(.error, message, metadata: metadata.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
            }
            if !loaded.isEmpty { Log.info("apps loaded", ["apps": loaded.map(\.rawValue).joined(separator: ",")]) }
            cluster?.connect(apps: apps, service: appService)
        } catch {
            Console.error("herald: cannot read the apps table: \(error)\n")
            return 2
        }
        // Dev mode: a second app the web demo can switch to (DemoApp, issue 14).
        if settings.dev, let secret = settings.jwtSecret,
           let signer = DemoApp.setUp(jwtSecret: secret, storage: database, service: appService) {
            apiConfiguration.devAppSigners[DemoApp.id] = signer
        }
        apiConfiguration.webPushAllowHTTP = settings.webPushAllowHTTP
        apiConfiguration.webPushAllowPrivate = settings.webPushAllowPrivate
        var catalog = NotificationCatalog.empty
        if let path = settings.catalogPath {
            do {
                catalog = try NotificationCatalog.load(path: path)
                Log.info("notification catalog loaded", ["path": path, "kinds": String(catalog.kinds.count)])
            } catch {
                Console.error("herald: HERALD_CATALOG_PATH '\(path)': \(error.message)\n")
                return 2
            }
        }
        // On PostgreSQL, plans are held under a name whose session lock other nodes read: a plan of
        // this process is theirs to take at once when it dies, not after its lease (ADR 0023).
        let planHolder: String?
        do {
            planHolder = try opened.postgres?.holdPlans()
        } catch {
            Console.error("herald: HERALD_DATABASE '\(StorageSetup.displayName(settings.databasePath))': \(error)\n")
            return 2
        }
        let notifier = Notifier(database: calls, broker: node.broker, presence: node.presence, barrier: node,
                                providers: push?.providers, catalog: catalog, payload: settings.payload,
                                profiles: { apps.profile($0) }, clock: SystemClock(), log: PushSetup.log, nodeID: planHolder,
                                pushQueued: push?.wakeWorker, pushBacklog: push == nil ? nil : pushBacklog, worker: push?.worker)
        let router = HeraldAPI.router(configuration: apiConfiguration, node: node, database: calls, sessions: sessions,
                                      push: push, notifier: notifier)
        var serverConfiguration = settings.server
        // The apps' CORS origins join HERALD_CORS_ORIGINS, as they change, each for its own app's
        // requests (ADR 0006).
        serverConfiguration.cors.moreOrigins = { origin, request, preflight in
            preflight ? apps.anyAppAllowsOrigin(origin) : apps.allowsOrigin(origin, request: request)
        }
        let server = HTTPServer(configuration: serverConfiguration, router: router, node: node)
        let port: Int
        do {
            port = try server.start()
        } catch {
            Console.error("herald: cannot listen on HERALD_HOST=\(settings.server.host) HERALD_PORT=\(settings.server.port): \(error)\n")
            return 2
        }
        Log.info("herald started", settings.startMetadata)
        Log.info("listening", ["url": "http://\(settings.server.host.contains(":") ? "[\(settings.server.host)]" : settings.server.host):\(port)"])
        if settings.dev, !FileManager.default.fileExists(atPath: settings.webDemoDirectory + "/index.html") {
            Log.warning("the web demo is not served: no index.html in HERALD_WEB_DEMO_DIR (run from the repository root, or set it)",
                        ["web_demo": settings.webDemoDirectory])
        }
        for (name, value) in settings.generated {
            Log.warning("dev mode generated a credential; set it in the environment to keep it across restarts", ["name": name, "value": value])
        }

        let purge = RetentionPurge(database: database, deviceRetentionDays: settings.deviceRetentionDays,
                                   jobRetentionDays: settings.jobRetentionDays, notifications: notificationRetention)
        purge.start()
        notifier.start()
        // A peer holder's death heard at once: its plans recovered now, not at the next pass (ADR 0027).
        if let postgres = opened.postgres, planHolder != nil {
            do {
                try postgres.watchPlanHolders { notifier.recover() }
            } catch {
                Log.error("could not watch the other nodes' plan holders; their plans wait for the recovery pass", ["error": "\(error)"])
            }
        }
        // Gives the heap's free pages back after bursts (closed streams, sent fan-outs; issue 17).
        let heapTrimmer = HeapTrimmer()
        heapTrimmer.start()

        var received: Int32 = 0
        sigwait(&signals, &received)
        Log.info("shutting down", ["signal": received == SIGTERM ? "SIGTERM" : "SIGINT"])
        // Each step below keeps its deadline even when a thread is stuck where it cannot be
        // interrupted (a write() on a frozen volume, a storage queue behind it): past a step's
        // deadline and a grace of 2 s, the process logs the step and exits 1.
        let watchdog = ShutdownWatchdog { step in
            Log.error("shutdown step did not finish by its deadline (storage or a thread is stuck); exiting without it",
                      ["step": step, "exit_code": "1"])
            _exit(1)
        }
        watchdog.start()
        watchdog.arm("stopping the listener and planning stored notifications", seconds: 5 + 2)
        // No new connections; streams are told to reconnect; requests in progress go on (OP-5).
        server.beginShutdown()
        notifier.stop()
        // Calls already stored finish planning. What is left after the deadline, recovery plans
        // at the next start.
        if !notifier.drain(deadline: 5) {
            Log.warning("notifications still being planned at the shutdown deadline; the next start plans them")
        }
        // Calls stuck on a stalled database get their 503 now, while their connections are
        // still open, instead of a reset when the loops stop.
        let unstuck = calls.expireCalls(waitingAtLeastMilliseconds: 1_000)
        if unstuck > 0 {
            Log.warning("calls still waiting on storage at shutdown answered 503 storage_unavailable", ["count": String(unstuck)])
        }
        // Their answers go out before the loops stop, so a caller never sees a stored call fail
        // (and retry it without an idempotency key). Streams have had their `shutdown` event.
        watchdog.arm("sending the answers of calls in progress", seconds: 1 + 2)
        let unanswered = server.finishShutdown(deadlineSeconds: 1)
        if unanswered > 0 {
            Log.warning("connections still busy at the shutdown deadline", ["count": String(unanswered)])
        }
        // Jobs being sent finish and record their outcome; queued ones wait for the next start.
        watchdog.arm("pushes in flight recording their outcomes", seconds: 10 + 2)
        if let left = push?.worker.stop(deadline: 10), left > 0 {
            Log.warning("pushes still in flight at the shutdown deadline; the next start sends them again", ["count": String(left)])
        }
        watchdog.arm("closing push clients, the retention purge, the broker and the database", seconds: 3)
        pushClient?.shutdown()
        purge.stop()
        cluster?.shutdown()
        // After the worker stopped: a restart may then take the id, and the jobs still leased, at once.
        identity?.release()
        opened.close()
        watchdog.disarm()
        withExtendedLifetime((heapTrimmer, calls)) {}
        return 0
    }
}
