import Foundation
import Glibc
import HeraldCore
import PushHTTP
import Realtime
import RealtimeRedis
import StorageSQLite

/// One environment variable Herald reads: its name, default and meaning (`herald --help`).
struct SettingSpec {
    let name: String
    let defaultValue: String
    let help: String
    /// Secrets are never printed in the start line.
    var secret = false
}

/// Why the environment cannot be used.
enum SettingsError: Error, CustomStringConvertible {
    case invalid(name: String, value: String, expected: String)
    case unreadable(name: String, path: String)
    /// A secret whose value is not shown: `why` says what is wrong with it and what is expected.
    case unusable(name: String, why: String)

    var description: String {
        switch self {
        case .invalid(let name, let value, let expected): return "\(name)='\(value)' is invalid: expected \(expected)"
        case .unreadable(let name, let path): return "\(name): cannot read '\(path)'"
        case .unusable(let name, let why): return "\(name) is unusable: \(why)"
        }
    }
}

/// Herald's configuration, read once from the environment (SPEC "Settings", OP-2).
struct Settings {
    static let specs: [SettingSpec] = [
        SettingSpec(name: "HERALD_HOST", defaultValue: "127.0.0.1", help: "listen address (numeric IPv4/IPv6)"),
        SettingSpec(name: "HERALD_PORT", defaultValue: "8080", help: "listen port"),
        SettingSpec(name: "HERALD_DATABASE", defaultValue: "./herald.db", help: "SQLite database file (created and migrated at start; one server per file, locked through <file>-lock: a second exits 3), or a postgres:// URL for PostgreSQL (several nodes)"),
        SettingSpec(name: "HERALD_NODE_ID", defaultValue: "", help: "PostgreSQL only: the name this node leases push jobs under (1-64 of A-Z a-z 0-9 _ - .), stable and unique per node, so a restarted node sends at once the jobs it held when it died; unset = unique per process (they wait out their lease). A start while another live process holds it is refused (exit 3)"),
        SettingSpec(name: "HERALD_NODE_LEASE_SECONDS", defaultValue: "15", help: "with PostgreSQL and HERALD_NODE_ID: how long the id stays held after its holder's last heartbeat (one every third of it); a node restarted after a crash on another machine waits at most this (3-600)"),
        SettingSpec(name: "HERALD_STORAGE_WAIT_SECONDS", defaultValue: "15", help: "a call waiting this long for a stalled database answers 503 storage_unavailable (a write may still complete: retry with its idempotency key)"),
        SettingSpec(name: "HERALD_DATABASE_WAL_LIMIT_BYTES", defaultValue: String(SQLiteStorage.defaultWALSizeLimitBytes), help: "the WAL's bound: journal_size_limit, and the size past which it is checkpointed and truncated"),
        SettingSpec(name: "HERALD_DEVICE_RETENTION_DAYS", defaultValue: "90", help: "devices not registered again for this many days are purged"),
        SettingSpec(name: "HERALD_PUSH_JOB_RETENTION_DAYS", defaultValue: "7", help: "done push jobs (GET /v1/jobs?state=done) older than this many days are purged; dead letters are kept"),
        SettingSpec(name: "HERALD_NOTIFICATION_RETENTION_DAYS", defaultValue: "0", help: "notifications (inbox items, read or unread) older than this many days are purged with their delivery records (1-36500); 0 = kept for ever"),
        SettingSpec(name: "HERALD_CATALOG_PATH", defaultValue: "", help: "JSON kind catalog: texts per locale, grouping, Android channels, preference defaults (examples/catalogs/)"),
        SettingSpec(name: "HERALD_PAYLOAD_ROOT_KEY", defaultValue: "", help: "put each push's data (with Herald's own keys) under this one key: an object on APNs, a JSON string in data[key] on FCM (AP-4); unset = top-level keys"),
        SettingSpec(name: "HERALD_SERVER_KEY", defaultValue: "", help: "bearer key of the app backend for the server API; unset = server API refuses all", secret: true),
        SettingSpec(name: "HERALD_JWT_SECRET", defaultValue: "", help: "HS256 secret for access tokens", secret: true),
        SettingSpec(name: "HERALD_ADMIN_KEY", defaultValue: "", help: "bearer key of the admin API of apps (/v1/apps); unset = admin API refuses all", secret: true),
        SettingSpec(name: "HERALD_SECRET_KEY", defaultValue: "", help: "base64 of 32 bytes: seals app secrets at rest (AES-256-GCM); needed to set secrets through /v1/apps", secret: true),
        SettingSpec(name: "HERALD_SECRET_KEY_FILE", defaultValue: "", help: "file holding HERALD_SECRET_KEY"),
        SettingSpec(name: "HERALD_SECRET_KEY_PREVIOUS", defaultValue: "", help: "rotation: the former HERALD_SECRET_KEY(s), comma-separated; opens old values, which are sealed again at start", secret: true),
        SettingSpec(name: "HERALD_JWT_PUBLIC_KEY", defaultValue: "", help: "PEM public key (RSA or EC P-256) for RS256/ES256 access tokens"),
        SettingSpec(name: "HERALD_JWT_PUBLIC_KEY_PATH", defaultValue: "", help: "file holding that PEM public key"),
        SettingSpec(name: "HERALD_DEV", defaultValue: "0", help: "1 = dev mode: POST /v1/dev/token, generated secret and server key printed at start when unset, the demo app demo-b"),
        SettingSpec(name: "HERALD_WEB_DEMO_DIR", defaultValue: "./web-demo", help: "dev mode: directory of the web demo served at / and /demo/"),
        SettingSpec(name: "HERALD_DEMO_DOUBLE_URL", defaultValue: "", help: "dev mode: base URL of the local provider double whose request log the demo shows (HERALD_DEMO_PUSH=1 scripts/run sets it)"),
        SettingSpec(name: "HERALD_LOOPS", defaultValue: "number of cores", help: "event-loop threads"),
        SettingSpec(name: "HERALD_HEARTBEAT_SECONDS", defaultValue: "15", help: "stream heartbeat interval: an SSE comment or a WebSocket ping after this much silence"),
        SettingSpec(name: "HERALD_DEAD_PEER_HEARTBEATS", defaultValue: "3", help: "a connection whose peer leaves Herald's bytes unacknowledged (or its keep-alive probes unanswered) this many heartbeat intervals is ended by the kernel (TCP_USER_TIMEOUT, TCP keep-alive), so a vanished client's stream and slot go within (this + 1) heartbeats; 1-100, 0 = the kernel's defaults (about 15 min)"),
        SettingSpec(name: "HERALD_HISTORY_SIZE", defaultValue: "256", help: "messages kept per channel for resume"),
        SettingSpec(name: "HERALD_HISTORY_TTL_SECONDS", defaultValue: "600", help: "age after which history messages are dropped"),
        SettingSpec(name: "HERALD_RETAINED_TTL_SECONDS", defaultValue: "86400", help: "age after which a retained message (RT-6) is no longer given to new subscribers and is dropped (ADR 0028); 1 s to 30 days"),
        SettingSpec(name: "HERALD_FOREGROUND_LEASE_SECONDS", defaultValue: "45", help: "how long app-level life keeps a session foreground (RT-7a)"),
        SettingSpec(name: "HERALD_WS_MAX_MESSAGE_BYTES", defaultValue: "65536", help: "largest WebSocket message from a client (close 1009 above)"),
        SettingSpec(name: "HERALD_WS_IDLE_TIMEOUT_SECONDS", defaultValue: "60", help: "a WebSocket that sends nothing, not even a pong, this long is closed"),
        SettingSpec(name: "HERALD_WS_PONG_TIMEOUT_SECONDS", defaultValue: "10", help: "a WebSocket whose server ping is not answered this long loses foreground and is closed (1001)"),
        SettingSpec(name: "HERALD_WS_MAX_FRAGMENTS", defaultValue: "128", help: "most frames one WebSocket message may arrive in (close 1008 above)"),
        SettingSpec(name: "HERALD_WS_ASSEMBLY_TIMEOUT_SECONDS", defaultValue: "10", help: "a WebSocket message not complete this long after its first frame closes the socket (1008)"),
        SettingSpec(name: "HERALD_RETRY_MS", defaultValue: "3000", help: "reconnect advice (SSE retry:, shutdown), spread per connection ± 50 %"),
        SettingSpec(name: "HERALD_WS_ECHO", defaultValue: "0", help: "1 = serve the unauthenticated /v1/ws/echo endpoint (conformance testing only)"),
        SettingSpec(name: "HERALD_MAX_BODY_BYTES", defaultValue: "1048576", help: "largest request body (413 above)"),
        SettingSpec(name: "HERALD_MAX_HEADER_BYTES", defaultValue: "16384", help: "largest request line + headers (431 above)"),
        SettingSpec(name: "HERALD_MAX_DATA_BYTES", defaultValue: "65536", help: "largest published data, compact JSON bytes"),
        SettingSpec(name: "HERALD_REQUEST_TIMEOUT_SECONDS", defaultValue: "10", help: "a request not fully received this long after its first byte gets 408"),
        SettingSpec(name: "HERALD_IDLE_TIMEOUT_SECONDS", defaultValue: "75", help: "keep-alive connections idle this long are closed"),
        SettingSpec(name: "HERALD_OUTBOUND_MAX_BYTES", defaultValue: "1048576", help: "per-connection unsent bytes before a stream reader counts as slow"),
        SettingSpec(name: "HERALD_OUTBOUND_MAX_EVENTS", defaultValue: "1000", help: "per-connection unsent events before a stream reader counts as slow"),
        SettingSpec(name: "HERALD_MAX_CONNECTIONS_PER_IP", defaultValue: "0", help: "simultaneous connections from one IP address (0 = unlimited)"),
        SettingSpec(name: "HERALD_MAX_STREAMS_PER_USER", defaultValue: "64", help: "simultaneous streams of one user on this node (0 = unlimited; 429 beyond)"),
        SettingSpec(name: "HERALD_CORS_ORIGINS", defaultValue: "", help: "comma-separated origins allowed by CORS, as browsers send them (https://app.example), or * (empty = no CORS headers)"),
        SettingSpec(name: "APNS_KEY_P8", defaultValue: "", help: "APNs .p8 key text (one line, \\n escapes allowed); or APNS_KEY_PATH", secret: true),
        SettingSpec(name: "APNS_KEY_PATH", defaultValue: "", help: "file holding the APNs .p8 key"),
        SettingSpec(name: "APNS_KEY_ID", defaultValue: "", help: "APNs key id (JWT kid)"),
        SettingSpec(name: "APNS_TEAM_ID", defaultValue: "", help: "Apple team id (JWT iss)"),
        SettingSpec(name: "APNS_TOPIC", defaultValue: "", help: "apns-topic: the app's bundle id"),
        SettingSpec(name: "FCM_SERVICE_ACCOUNT_JSON", defaultValue: "", help: "Google service account JSON text; or FCM_SERVICE_ACCOUNT_PATH", secret: true),
        SettingSpec(name: "FCM_SERVICE_ACCOUNT_PATH", defaultValue: "", help: "file holding the service account JSON"),
        SettingSpec(name: "FCM_PROJECT_ID", defaultValue: "the account's project_id", help: "Firebase project"),
        SettingSpec(name: "HERALD_VAPID_PRIVATE_KEY", defaultValue: "", help: "Web Push VAPID private key: the 32-byte P-256 scalar, base64url (herald vapid generate); or HERALD_VAPID_KEY_PATH", secret: true),
        SettingSpec(name: "HERALD_VAPID_KEY_PATH", defaultValue: "", help: "file holding the VAPID private key as PEM (EC P-256)"),
        SettingSpec(name: "HERALD_VAPID_PUBLIC_KEY", defaultValue: "derived", help: "VAPID public key, base64url; checked against the private key"),
        SettingSpec(name: "HERALD_VAPID_SUBJECT", defaultValue: "", help: "VAPID contact: mailto:ops@example.com or an https: URL"),
        SettingSpec(name: "HERALD_WEBPUSH_ALLOW_HTTP", defaultValue: "HERALD_DEV", help: "1 = accept and send to http:// Web Push endpoints on loopback hosts (127.0.0.0/8, localhost, ::1); needs HERALD_WEBPUSH_ALLOW_PRIVATE"),
        SettingSpec(name: "HERALD_WEBPUSH_ALLOW_PRIVATE", defaultValue: "HERALD_DEV", help: "1 = accept and send to Web Push endpoints that are not on the public internet: loopback, private, link-local, CGNAT, multicast addresses and local names, given or resolved (tests, the provider double); 0 refuses them (400 endpoint_not_public, dead letter)"),
        SettingSpec(name: "HERALD_APNS_URL", defaultValue: "https://api.push.apple.com", help: "APNs production gateway"),
        SettingSpec(name: "HERALD_APNS_SANDBOX_URL", defaultValue: "https://api.sandbox.push.apple.com", help: "APNs sandbox gateway"),
        SettingSpec(name: "HERALD_FCM_URL", defaultValue: "https://fcm.googleapis.com", help: "FCM base URL (the OAuth URL comes from the account's token_uri)"),
        SettingSpec(name: "HERALD_EXPO_URL", defaultValue: "https://exp.host", help: "Expo push service base URL; setting it enables Expo"),
        SettingSpec(name: "HERALD_EXPO_ACCESS_TOKEN", defaultValue: "", help: "Expo access token (Bearer; needed with enhanced push security); setting it enables Expo", secret: true),
        SettingSpec(name: "HERALD_EXPO_ENABLED", defaultValue: "0", help: "1 = send Expo pushes without a token or URL setting"),
        SettingSpec(name: "HERALD_EXPO_BATCH_MS", defaultValue: "10", help: "how long an Expo push waits for others to share its request (at most 100 per request)"),
        SettingSpec(name: "HERALD_PUSH_RECEIPT_DELAY_MS", defaultValue: "900000", help: "when an accepted Expo push's receipt is asked for (15 min; Expo keeps receipts 24 h)"),
        SettingSpec(name: "HERALD_PUSH_RECEIPT_RECHECK_MS", defaultValue: "300000", help: "when a receipt that was not ready is asked for again"),
        SettingSpec(name: "HERALD_CA_FILE", defaultValue: "system CAs", help: "extra CA bundle trusted for outgoing TLS (tests, private gateways)"),
        SettingSpec(name: "HERALD_PUSH_MAX_CONNECTIONS", defaultValue: "2", help: "HTTP/2 connections per provider host (each multiplexes many pushes)"),
        SettingSpec(name: "HERALD_PUSH_RETRY_BASE_MS", defaultValue: "1000", help: "first retry delay scale; doubles per attempt, full jitter"),
        SettingSpec(name: "HERALD_PUSH_RETRY_CAP_MS", defaultValue: "120000", help: "largest retry backoff before jitter"),
        SettingSpec(name: "HERALD_PUSH_RETRY_BUDGET_MS", defaultValue: "14400000", help: "a push job failing this long after its first attempt is dead-lettered (4 h)"),
        SettingSpec(name: "HERALD_PUSH_MAX_ATTEMPTS", defaultValue: "300", help: "attempts that reached the provider before a push job is dead-lettered (unsent ones do not count)"),
        SettingSpec(name: "HERALD_PUSH_LEASE_SECONDS", defaultValue: "60", help: "how long a claimed push job is held before another worker (or node) may take it; a push not sent and answered by its end less a margin (a fifth, 1-10 s) is dropped or cut and retried, so a provider stall does not make another claim send it again"),
        SettingSpec(name: "HERALD_PUSH_BACKLOG_LIMIT", defaultValue: "1024", help: "SQLite: push jobs queued and not yet claimed past which POST /v1/notifications calls wait (up to 1 s) for the worker; 0 = never wait"),
        SettingSpec(name: "HERALD_LOG_LEVEL", defaultValue: "info", help: "debug | info | warning | error"),
        SettingSpec(name: "HERALD_LOG_FORMAT", defaultValue: "json", help: "json | text"),
        SettingSpec(name: "HERALD_BROKER", defaultValue: "", help: "redis://host:port[/db]: channels, history, retained messages, presence and session ends shared by every node through Redis (SC-1); unset = in this process only"),
        SettingSpec(name: "HERALD_BROKER_NAMESPACE", defaultValue: "herald", help: "prefix of Herald's Redis keys and channels; the nodes of one cluster share it"),
        SettingSpec(name: "HERALD_CLUSTER_RECEIPT_WAIT_MS", defaultValue: "250", help: "with HERALD_BROKER: how long the push planner waits for other nodes to confirm a live delivery (ADR 0005)"),
    ]

    var server = HTTPServerConfiguration()
    var loops: Int
    var historySize = 256
    var historyTTLSeconds = 600
    /// `HERALD_RETAINED_TTL_SECONDS` (ADR 0028): a day, so a page opened later still sees the status.
    var retainedTTLSeconds = 86_400
    var serverKey: String?
    var jwtSecret: String?
    /// `HERALD_ADMIN_KEY`: the admin API of apps (ADR 0006).
    var adminKey: String?
    /// `HERALD_SECRET_KEY` (or `_FILE`) with `HERALD_SECRET_KEY_PREVIOUS`: seals app secrets.
    var secretBox: SecretBox?
    var jwtPublicKeyPEM: String?
    /// Which setting the public key came from, for error messages.
    var jwtPublicKeySource: String?
    var dev = false
    var maxDataBytes = 64 * 1024
    var foregroundLeaseSeconds = 45
    var databasePath = "./herald.db"
    /// `HERALD_NODE_ID`: the name a PostgreSQL node leases jobs under; nil: unique per process.
    var nodeID: String?
    /// `HERALD_NODE_LEASE_SECONDS`: how long a node id stays held after its holder's last
    /// heartbeat (ADR 0016); the heartbeat runs every third of it.
    var nodeLeaseSeconds = 15
    /// `HERALD_STORAGE_WAIT_SECONDS`: how long a call waits for storage before it answers 503
    /// (`BoundedStorage`); above SQLite's busy timeout (5 s) and PostgreSQL's lock timeout (10 s).
    var storageWaitSeconds = 15
    /// `HERALD_DATABASE_WAL_LIMIT_BYTES`: the WAL's bound in bytes (RL-2).
    var databaseWALLimitBytes = Int(SQLiteStorage.defaultWALSizeLimitBytes)
    var retryPolicy = RetryPolicy()
    var pushMaxConnections = 2
    /// `HERALD_PUSH_RECEIPT_DELAY_MS` / `HERALD_PUSH_RECEIPT_RECHECK_MS` (PU-8a).
    var receiptDelayMilliseconds = 900_000
    var receiptRecheckMilliseconds = 300_000
    /// `HERALD_PUSH_LEASE_SECONDS`: a claimed job's lease (PU-5, SC-3: a killed node's jobs are
    /// claimed again after it). It must outlast a provider request, which is not renewed.
    var pushLeaseSeconds = 60
    /// `HERALD_PUSH_BACKLOG_LIMIT`: unclaimed push jobs past which notification calls wait for
    /// the worker (`PushBacklog`, issue 17); 0: never. SQLite only (one worker per queue).
    var pushBacklogLimit = 1_024
    var deviceRetentionDays = 90
    /// Days a done push job is kept (`HERALD_PUSH_JOB_RETENTION_DAYS`).
    var jobRetentionDays = 7
    /// Days a notification and its delivery records are kept (`HERALD_NOTIFICATION_RETENTION_DAYS`,
    /// ADR 0012); 0 keeps them for ever.
    var notificationRetentionDays = 0
    /// `HERALD_CATALOG_PATH`: the kind catalog file, if any (NO-4, NO-5, NO-7).
    var catalogPath: String?
    /// `HERALD_PAYLOAD_ROOT_KEY`: the default app's payload options (AP-4).
    var payload = PayloadOptions.flat
    var webSocketEcho = false
    /// `HERALD_WEBPUSH_ALLOW_HTTP` (default: dev mode): Web Push subscriptions whose endpoint is
    /// `http://` on a loopback host are registered and sent to.
    var webPushAllowHTTP = false
    /// `HERALD_WEBPUSH_ALLOW_PRIVATE` (default: dev mode): Web Push endpoints whose host is not
    /// public (`PublicHostRule`), or resolves to no public address, are registered and sent to.
    var webPushAllowPrivate = false
    /// `HERALD_WEB_DEMO_DIR`: the web demo's files (OP-6), served in dev mode only.
    var webDemoDirectory = "./web-demo"
    /// `HERALD_DEMO_DOUBLE_URL`: the local push demo's provider double, if it runs.
    var demoDoubleURL: String?
    var logLevel = LogLevel.info
    var logFormat = LogFormat.json
    /// `HERALD_BROKER`: Redis shared by the nodes of a cluster; nil = memory adapters (one process).
    var brokerEndpoint: RedisEndpoint?
    /// `HERALD_BROKER_NAMESPACE`: the `{namespace}` of every Redis key and channel.
    var brokerNamespace = "herald"
    /// `HERALD_CLUSTER_RECEIPT_WAIT_MS`: the planner's wait for other nodes' receipts (ADR 0005).
    var clusterReceiptWaitMilliseconds = 250
    /// Values generated in dev mode, printed once at start.
    var generated: [(String, String)] = []

    init(environment: [String: String]) throws(SettingsError) {
        func value(_ name: String) -> String? {
            guard let raw = environment[name]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
            return raw
        }
        func integer(_ name: String, _ fallback: Int, min: Int, max: Int = Int.max) throws(SettingsError) -> Int {
            guard let raw = value(name) else { return fallback }
            // Digits only: `Int` also reads `+8080` and `-0`, spellings no setting documents (every
            // minimum is 0 or more), and a sign there is more likely a slip than a meaning.
            guard raw.isASCIIDigits, let number = Int(raw), number >= min, number <= max else {
                throw .invalid(name: name, value: raw, expected: "an integer from \(min) to \(max == Int.max ? "∞" : String(max)), in digits only")
            }
            return number
        }
        func flag(_ name: String) throws(SettingsError) -> Bool {
            guard let raw = value(name) else { return false }
            switch raw.lowercased() {
            case "1", "true", "yes", "on": return true
            case "0", "false", "no", "off": return false
            default: throw .invalid(name: name, value: raw, expected: "1 or 0 (true/false, yes/no and on/off are read too)")
            }
        }

        server.host = value("HERALD_HOST") ?? "127.0.0.1"
        var probe = in6_addr()
        guard inet_pton(AF_INET, server.host, &probe) == 1 || inet_pton(AF_INET6, server.host, &probe) == 1 else {
            throw .invalid(name: "HERALD_HOST", value: server.host, expected: "a numeric IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0 or ::")
        }
        server.port = try integer("HERALD_PORT", 8080, min: 0, max: 65535)
        loops = try integer("HERALD_LOOPS", ProcessInfo.processInfo.activeProcessorCount, min: 1, max: 256)
        server.heartbeatSeconds = try integer("HERALD_HEARTBEAT_SECONDS", 15, min: 1, max: 3600)
        // 100 × 3600 s in milliseconds fits TCP_USER_TIMEOUT's int; the kernel caps TCP_KEEPCNT at 127.
        server.deadPeerHeartbeats = try integer("HERALD_DEAD_PEER_HEARTBEATS", 3, min: 0, max: 100)
        historySize = try integer("HERALD_HISTORY_SIZE", 256, min: 1, max: 1_000_000)
        historyTTLSeconds = try integer("HERALD_HISTORY_TTL_SECONDS", 600, min: 1, max: 30 * 86_400)
        retainedTTLSeconds = try integer("HERALD_RETAINED_TTL_SECONDS", 86_400, min: 1, max: 30 * 86_400)
        server.parserLimits.maxBodyBytes = try integer("HERALD_MAX_BODY_BYTES", 1 << 20, min: 1024, max: 1 << 30)
        server.parserLimits.maxHeadBytes = try integer("HERALD_MAX_HEADER_BYTES", 16 * 1024, min: 1024, max: 1 << 20)
        maxDataBytes = try integer("HERALD_MAX_DATA_BYTES", 64 * 1024, min: 16, max: 1 << 30)
        server.requestTimeoutSeconds = try integer("HERALD_REQUEST_TIMEOUT_SECONDS", 10, min: 1, max: 3600)
        server.idleTimeoutSeconds = try integer("HERALD_IDLE_TIMEOUT_SECONDS", 75, min: 1, max: 86_400)
        server.outboundMaxBytes = try integer("HERALD_OUTBOUND_MAX_BYTES", 1 << 20, min: 4096, max: 1 << 30)
        server.outboundMaxEvents = try integer("HERALD_OUTBOUND_MAX_EVENTS", 1000, min: 1, max: 1_000_000)
        server.maxConnectionsPerIP = try integer("HERALD_MAX_CONNECTIONS_PER_IP", 0, min: 0)
        server.maxStreamsPerUser = try integer("HERALD_MAX_STREAMS_PER_USER", 64, min: 0)
        let corsOrigins = (value("HERALD_CORS_ORIGINS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        do { try CORSOrigin.checkAllowed(corsOrigins) } catch {
            throw .invalid(name: "HERALD_CORS_ORIGINS", value: error.origin, expected: "origins as browsers send them, comma-separated, or *: \(error.reason)")
        }
        server.cors = CORSPolicy(allowedOrigins: corsOrigins)
        serverKey = value("HERALD_SERVER_KEY")
        adminKey = value("HERALD_ADMIN_KEY")
        if let adminKey, adminKey.utf8.count < 16 {
            throw .invalid(name: "HERALD_ADMIN_KEY", value: "(\(adminKey.utf8.count) characters)", expected: "at least 16 characters")
        }
        var secretKeyText = value("HERALD_SECRET_KEY")
        if secretKeyText == nil, let path = value("HERALD_SECRET_KEY_FILE") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw .unreadable(name: "HERALD_SECRET_KEY_FILE", path: path) }
            secretKeyText = text
        }
        if let secretKeyText {
            // Each variable on its own, so the message names the one that is wrong and says why.
            func key(_ text: some StringProtocol, _ name: String) throws(SettingsError) -> [UInt8] {
                do { return try SecretBox.key(fromText: String(text)) } catch {
                    guard case .badKey(let why) = error else { throw .invalid(name: name, value: "(hidden)", expected: error.message) }
                    throw .unusable(name: name, why: why)
                }
            }
            let keyName = value("HERALD_SECRET_KEY") == nil ? "HERALD_SECRET_KEY_FILE" : "HERALD_SECRET_KEY"
            let current = try key(secretKeyText, keyName)
            let previous = try (value("HERALD_SECRET_KEY_PREVIOUS") ?? "").split(separator: ",").map { (text) throws(SettingsError) in
                try key(text, "HERALD_SECRET_KEY_PREVIOUS")
            }
            do { secretBox = try SecretBox(key: current, previous: previous) } catch {
                throw .invalid(name: "HERALD_SECRET_KEY", value: "(hidden)", expected: error.message)
            }
        }
        jwtSecret = value("HERALD_JWT_SECRET")
        if let pem = value("HERALD_JWT_PUBLIC_KEY") {
            jwtPublicKeyPEM = pem.replacingOccurrences(of: "\\n", with: "\n")
            jwtPublicKeySource = "HERALD_JWT_PUBLIC_KEY"
        } else if let path = value("HERALD_JWT_PUBLIC_KEY_PATH") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw .unreadable(name: "HERALD_JWT_PUBLIC_KEY_PATH", path: path)
            }
            jwtPublicKeyPEM = text
            jwtPublicKeySource = "HERALD_JWT_PUBLIC_KEY_PATH"
        }
        dev = try flag("HERALD_DEV")
        webDemoDirectory = value("HERALD_WEB_DEMO_DIR") ?? "./web-demo"
        if let url = value("HERALD_DEMO_DOUBLE_URL") {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw .invalid(name: "HERALD_DEMO_DOUBLE_URL", value: url, expected: "an http:// or https:// URL")
            }
            demoDoubleURL = url
        }
        databasePath = value("HERALD_DATABASE") ?? "./herald.db"
        if let id = value("HERALD_NODE_ID") {
            // It is a key of `cluster_nodes`, shown in /readyz, the log and `locked_by`: a name,
            // not free text (breaker11: 300 characters and spaces were taken).
            guard EventName.isName(id), !id.contains(":") else {
                throw .invalid(name: "HERALD_NODE_ID", value: id, expected: "1-64 characters of A-Z a-z 0-9 _ - . (e.g. web-1)")
            }
            nodeID = id
        }
        // Below 3 s a heartbeat (a third) would be under a second, faster than a stalled server
        // fails one; above 10 min a crashed node's restart elsewhere would wait that long.
        nodeLeaseSeconds = try integer("HERALD_NODE_LEASE_SECONDS", 15, min: 3, max: 600)
        storageWaitSeconds = try integer("HERALD_STORAGE_WAIT_SECONDS", 15, min: 1, max: 3600)
        databaseWALLimitBytes = try integer("HERALD_DATABASE_WAL_LIMIT_BYTES", Int(SQLiteStorage.defaultWALSizeLimitBytes), min: 64 << 10, max: 1 << 34)
        deviceRetentionDays = try integer("HERALD_DEVICE_RETENTION_DAYS", 90, min: 1, max: 36_500)
        jobRetentionDays = try integer("HERALD_PUSH_JOB_RETENTION_DAYS", 7, min: 1, max: 36_500)
        notificationRetentionDays = try integer("HERALD_NOTIFICATION_RETENTION_DAYS", 0, min: 0, max: NotificationRetention.maximumDays)
        catalogPath = value("HERALD_CATALOG_PATH")
        if let rootKey = value("HERALD_PAYLOAD_ROOT_KEY") {
            do {
                payload = try PayloadOptions(rootKey: rootKey)
            } catch {
                throw .invalid(name: "HERALD_PAYLOAD_ROOT_KEY", value: rootKey, expected: "1-64 of A-Z a-z 0-9 _ - . and not aps, from, notification, message_type, collapse_key, google.*, gcm.*")
            }
        }
        pushMaxConnections = try integer("HERALD_PUSH_MAX_CONNECTIONS", 2, min: 1, max: 64)
        receiptDelayMilliseconds = try integer("HERALD_PUSH_RECEIPT_DELAY_MS", 900_000, min: 0, max: 86_400_000)
        receiptRecheckMilliseconds = try integer("HERALD_PUSH_RECEIPT_RECHECK_MS", 300_000, min: 1, max: 86_400_000)
        pushLeaseSeconds = try integer("HERALD_PUSH_LEASE_SECONDS", 60, min: 2, max: 3_600)
        pushBacklogLimit = try integer("HERALD_PUSH_BACKLOG_LIMIT", 1_024, min: 0, max: 10_000_000)
        let retryBase = try integer("HERALD_PUSH_RETRY_BASE_MS", Int(RetryPolicy.defaultBaseMilliseconds), min: 1, max: 3_600_000)
        let retryCap = try integer("HERALD_PUSH_RETRY_CAP_MS", max(Int(RetryPolicy.defaultCapMilliseconds), retryBase), min: retryBase, max: 86_400_000)
        let retryBudget = try integer("HERALD_PUSH_RETRY_BUDGET_MS", Int(RetryPolicy.defaultBudgetMilliseconds), min: 1, max: 30 * 86_400_000)
        retryPolicy = RetryPolicy(baseMilliseconds: Int64(retryBase), capMilliseconds: Int64(retryCap),
                                  maxAttempts: try integer("HERALD_PUSH_MAX_ATTEMPTS", RetryPolicy.defaultMaxAttempts, min: 1, max: 100_000),
                                  budgetMilliseconds: Int64(retryBudget))
        webSocketEcho = try flag("HERALD_WS_ECHO")
        webPushAllowPrivate = try value("HERALD_WEBPUSH_ALLOW_PRIVATE") == nil ? dev : flag("HERALD_WEBPUSH_ALLOW_PRIVATE")
        // A loopback http endpoint is a private host: dev mode's default follows the private rule,
        // and an explicit 1 without it could never be sent to.
        webPushAllowHTTP = try value("HERALD_WEBPUSH_ALLOW_HTTP") == nil ? dev && webPushAllowPrivate : flag("HERALD_WEBPUSH_ALLOW_HTTP")
        if webPushAllowHTTP && !webPushAllowPrivate {
            throw .invalid(name: "HERALD_WEBPUSH_ALLOW_HTTP", value: "1",
                           expected: "0 while HERALD_WEBPUSH_ALLOW_PRIVATE is 0 (http endpoints are on loopback hosts, which are not public); set HERALD_WEBPUSH_ALLOW_PRIVATE=1 too")
        }
        foregroundLeaseSeconds = try integer("HERALD_FOREGROUND_LEASE_SECONDS", 45, min: 1, max: 86_400)
        server.webSocketMaxMessageBytes = try integer("HERALD_WS_MAX_MESSAGE_BYTES", 64 * 1024, min: 125, max: 64 << 20)
        server.webSocketIdleTimeoutSeconds = try integer("HERALD_WS_IDLE_TIMEOUT_SECONDS", 60, min: 2, max: 86_400)
        server.webSocketPongTimeoutSeconds = try integer("HERALD_WS_PONG_TIMEOUT_SECONDS", 10, min: 1, max: 3600)
        server.webSocketMaxFragments = try integer("HERALD_WS_MAX_FRAGMENTS", 128, min: 1, max: 1 << 20)
        server.webSocketAssemblyTimeoutSeconds = try integer("HERALD_WS_ASSEMBLY_TIMEOUT_SECONDS", 10, min: 1, max: 3600)
        server.retryMilliseconds = try integer("HERALD_RETRY_MS", 3000, min: 100, max: 3_600_000)
        if let raw = value("HERALD_LOG_LEVEL") {
            guard let level = LogLevel(name: raw) else { throw .invalid(name: "HERALD_LOG_LEVEL", value: raw, expected: "debug, info, warning or error") }
            logLevel = level
        }
        if let raw = value("HERALD_LOG_FORMAT") {
            guard let format = LogFormat(rawValue: raw.lowercased()) else { throw .invalid(name: "HERALD_LOG_FORMAT", value: raw, expected: "json or text") }
            logFormat = format
        }
        if let url = value("HERALD_BROKER") {
            guard let endpoint = RedisEndpoint(url: url) else {
                // A password is never echoed: Herald sends no AUTH, so user info is refused, and
                // the message says so rather than show it.
                throw .invalid(name: "HERALD_BROKER", value: RedisEndpoint.redacted(url: url),
                               expected: "redis://host:port[/db], e.g. redis://127.0.0.1:6379/0 (no user or password: Herald sends no AUTH, keep Redis on a private network)")
            }
            brokerEndpoint = endpoint
        }
        if let namespace = value("HERALD_BROKER_NAMESPACE") {
            guard EventName.isName(namespace), !namespace.contains(":") else {
                throw .invalid(name: "HERALD_BROKER_NAMESPACE", value: namespace, expected: "1-64 characters of A-Z a-z 0-9 _ - .")
            }
            brokerNamespace = namespace
        }
        clusterReceiptWaitMilliseconds = try integer("HERALD_CLUSTER_RECEIPT_WAIT_MS", 250, min: 0, max: 10_000)
        if dev {
            if jwtSecret == nil {
                jwtSecret = Self.randomToken()
                generated.append(("HERALD_JWT_SECRET", jwtSecret!))
            }
            if serverKey == nil {
                serverKey = Self.randomToken()
                generated.append(("HERALD_SERVER_KEY", serverKey!))
            }
        }
    }

    /// The effective configuration for the start line; secrets show only whether they are set.
    var startMetadata: KeyValuePairs<String, String> {
        [
            "host": server.host, "port": String(server.port), "loops": String(loops),
            "database": StorageSetup.displayName(databasePath), "database_wal_limit_bytes": String(databaseWALLimitBytes), "storage_wait_seconds": String(storageWaitSeconds), "device_retention_days": String(deviceRetentionDays), "job_retention_days": String(jobRetentionDays),
            "notification_retention_days": notificationRetentionDays == 0 ? "0 (kept)" : String(notificationRetentionDays),
            "catalog": catalogPath ?? "none", "payload_root_key": payload.rootKey ?? "none",
            "dev": dev ? "1" : "0",
            "web_demo": dev ? webDemoDirectory : "off",
            "push_demo_double": dev ? demoDoubleURL ?? "none" : "off",
            "server_key": serverKey == nil ? "unset" : "set",
            "jwt": [jwtSecret == nil ? nil : "HS256", jwtPublicKeyPEM == nil ? nil : "public-key"].compactMap { $0 }.joined(separator: "+").ifEmpty("none"),
            "heartbeat_seconds": String(server.heartbeatSeconds),
            "dead_peer_heartbeats": server.deadPeerHeartbeats == 0 ? "0 (kernel defaults)" : String(server.deadPeerHeartbeats),
            "history_size": String(historySize), "history_ttl_seconds": String(historyTTLSeconds),
            "retained_ttl_seconds": String(retainedTTLSeconds),
            "max_body_bytes": String(server.parserLimits.maxBodyBytes), "max_header_bytes": String(server.parserLimits.maxHeadBytes),
            "max_data_bytes": String(maxDataBytes),
            "foreground_lease_seconds": String(foregroundLeaseSeconds),
            "ws_max_message_bytes": String(server.webSocketMaxMessageBytes),
            "ws_idle_timeout_seconds": String(server.webSocketIdleTimeoutSeconds),
            "ws_pong_timeout_seconds": String(server.webSocketPongTimeoutSeconds), "ws_max_fragments": String(server.webSocketMaxFragments),
            "ws_assembly_timeout_seconds": String(server.webSocketAssemblyTimeoutSeconds), "retry_ms": String(server.retryMilliseconds), "ws_echo": webSocketEcho ? "1" : "0", "webpush_allow_http": webPushAllowHTTP ? "1" : "0", "webpush_allow_private": webPushAllowPrivate ? "1" : "0",
            "request_timeout_seconds": String(server.requestTimeoutSeconds), "idle_timeout_seconds": String(server.idleTimeoutSeconds),
            "outbound_max_bytes": String(server.outboundMaxBytes), "outbound_max_events": String(server.outboundMaxEvents),
            "max_connections_per_ip": String(server.maxConnectionsPerIP),
            "max_streams_per_user": String(server.maxStreamsPerUser),
            "cors_origins": server.cors.allowedOrigins.joined(separator: ","),
            "node_id": nodeID ?? "unique per process", "node_lease_seconds": String(nodeLeaseSeconds),
            "push_lease_seconds": String(pushLeaseSeconds),
            "push_backlog_limit": String(pushBacklogLimit),
            "push_receipts": "delay \(receiptDelayMilliseconds) ms, recheck \(receiptRecheckMilliseconds) ms",
            "push_retry": "base \(retryPolicy.baseMilliseconds) ms, cap \(retryPolicy.capMilliseconds) ms, budget \(retryPolicy.budgetMilliseconds) ms, max \(retryPolicy.maxAttempts) attempts",
            "log_level": logLevel.name, "log_format": logFormat.rawValue,
            "broker": brokerEndpoint.map { "\($0) namespace \(brokerNamespace)" } ?? "memory",
        ]
    }

    static var helpText: String {
        var text = """
        herald — realtime sync server with a push bridge

        Usage:
          herald [serve]      run the server (default)
          herald migrate      create or upgrade the database (HERALD_DATABASE) and exit
          herald send-test --device-token T --platform ios|android|web [--provider apns|fcm|webpush|expo]
                           [--environment sandbox|production] [--locale L] [--title T] [--body B]
                              send one push now with the APNS_*/FCM_*/VAPID credentials and print
                              the provider's answer (exit 0 when delivered)
          herald jobs retry [--app APP] [--provider apns|fcm|webpush|expo] [--reason CODE]
                            [--since TIME] [--until TIME] [--kind KIND]
                              queue again the dead push jobs of app APP (default: default)
                              matching every filter given, with fresh attempts (TIME: RFC 3339
                              or unix ms, --until exclusive; CODE: a dead job's dead_reason, e.g.
                              ServiceUnavailable); prints {"retried": n}. Works on the
                              database of HERALD_DATABASE, server running or not
          herald vapid generate [--pem]
                              print a new Web Push VAPID key pair as the two settings lines
                              for HERALD_VAPID_PUBLIC_KEY and HERALD_VAPID_PRIVATE_KEY (--pem:
                              only the private key as PEM on stdout, for HERALD_VAPID_KEY_PATH,
                              and the public key on stderr)
          herald --help       this text

        Settings (environment variables):

        """
        let width = specs.map(\.name.count).max() ?? 0
        for spec in specs {
            let name = spec.name.padding(toLength: width, withPad: " ", startingAt: 0)
            let fallback = spec.defaultValue.isEmpty ? "unset" : spec.defaultValue
            text += "  \(name)  \(spec.help) (default: \(fallback))\n"
        }
        return text
    }

    private static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}

extension String {
    func ifEmpty(_ fallback: String) -> String { isEmpty ? fallback : self }
}
