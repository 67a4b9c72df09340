import HeraldCore
import PushHTTP
import Realtime

/// What the HTTP API needs to know beyond the realtime core: credentials and body limits.
public struct APIConfiguration: Sendable {
    /// Bearer key of the app backend for the server API (`HERALD_SERVER_KEY`); nil refuses all.
    public var serverKey: String?
    /// Keys access tokens may be signed with (HS256 secret and/or a PEM public key).
    public var verificationKeys: [VerificationKey]
    /// Signs `POST /v1/dev/token` tokens; non-nil only in dev mode (`HERALD_DEV=1`).
    public var devIssuer: AccessTokenIssuer?
    /// Signs `POST /v1/dev/token` tokens for the stored demo apps dev mode sets up (`"app": "demo-b"`),
    /// by app; the key's public half is in the app's `tokens.public_keys` (`DevAppKey`). Empty
    /// outside dev mode, or when the apps table could not take the demo app.
    public var devAppSigners: [AppID: ES256Signer] = [:]
    /// Clock skew allowed on `exp`/`nbf`, seconds (RT-3: 60).
    public var leewaySeconds: Int64 = 60
    /// Largest published `data`, bytes of compact JSON (RT-4: 64 KiB).
    public var maxDataBytes: Int = 64 * 1024
    /// Most channels one stream may ask for with `?channels=`.
    public var maxChannelsPerStream: Int = 64
    /// Most messages in one `POST /v1/publish/batch`.
    public var maxBatchMessages: Int = 1000
    /// Serve the unauthenticated `/v1/ws/echo` endpoint (`HERALD_WS_ECHO=1`, conformance tests only).
    public var webSocketEcho = false
    /// The web demo's files (`HERALD_WEB_DEMO_DIR`), served at `/` and `/demo/` in dev mode only (OP-6).
    public var webDemoDirectory = "./web-demo"
    /// The local push demo's provider double (`HERALD_DEMO_DOUBLE_URL`), whose request log the demo
    /// page shows; nil when the demo runs without it.
    public var demoPushDouble: DemoPushDouble?
    /// The push providers this build has (the executable wires them), with or without credentials:
    /// their token rules check registrations, and readiness lists them. The default knows none, so
    /// every token is checked as opaque text (`OpaqueDeviceToken`).
    public var pushProviders = PushProviders()
    /// The VAPID public key (base64url, 65 bytes uncompressed) browsers subscribe with
    /// (`GET /v1/push/vapid-public-key`); nil when Web Push is not configured.
    public var vapidPublicKey: String?
    /// Register Web Push subscriptions whose endpoint is `http://` on a loopback host
    /// (`HERALD_WEBPUSH_ALLOW_HTTP`, default: dev mode).
    public var webPushAllowHTTP = false
    /// Register Web Push subscriptions whose endpoint host is not public (loopback, private,
    /// link-local… addresses, local names; `PublicHostRule`): `HERALD_WEBPUSH_ALLOW_PRIVATE`,
    /// default: dev mode.
    public var webPushAllowPrivate = false
    /// Every app served (ADR 0006); nil: only `default`, from `serverKey` and `verificationKeys`.
    public var apps: AppDirectory?
    /// `HERALD_ADMIN_KEY`: the bearer key of `/v1/apps`; nil refuses every admin call.
    public var adminKey: String?
    /// The apps' life cycle behind `/v1/apps`; nil: a service over `apps` without secrets or providers.
    public var appService: AppService?
    /// What the retention purge deleted on this node (`/metrics`, ADR 0012).
    public var retentionMetrics = RetentionMetrics()
    /// This node's hold on `HERALD_NODE_ID` (ADR 0016): another instance holding it makes `/readyz`
    /// not ready and sets `herald_node_id_conflict`; nil without PostgreSQL or a node id.
    public var nodeIdentity: NodeIdentityLease?

    public init(serverKey: String?, verificationKeys: [VerificationKey], devIssuer: AccessTokenIssuer? = nil) {
        self.serverKey = serverKey
        self.verificationKeys = verificationKeys
        self.devIssuer = devIssuer
    }
}

/// Where the local push demo's provider double (Tests/ProviderDouble) listens, so that the dev-only
/// `GET /v1/dev/push-double/requests` can show the page what each push looked like on arrival.
public struct DemoPushDouble: Sendable {
    /// The double's base URL, e.g. `https://127.0.0.1:41234`; its control API is under `/_double`.
    public var baseURL: String
    /// The double's throw-away CA (`HERALD_CA_FILE`), or nil for the system CAs.
    public var caFile: String?

    public init(baseURL: String, caFile: String?) {
        self.baseURL = baseURL
        self.caFile = caFile
    }
}
