// swift-tools-version:6.0
// Targets and their one-way dependencies are described in docs/architecture.md.
import PackageDescription

let package = Package(
    name: "Herald",
    products: [
        .executable(name: "herald", targets: ["herald"]),
    ],
    targets: [
        .systemLibrary(name: "CLinux"),
        // OpenSSL is opened on first use too (COpenSSLShim): headers only here.
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libcurl, libpq and libhiredis are opened on first use, not linked (CDynamicLoad's header says why);
        // their module maps give the headers only (no pkgConfig, whose --libs would link them), and each *Shim target defines the functions Herald calls.
        .target(name: "CDynamicLoad", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "CCurlShim", dependencies: ["CCurl", "CDynamicLoad"]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CPostgres", providers: [.apt(["libpq-dev"])]),
        .target(name: "CHiredisShim", dependencies: ["CHiredis", "CDynamicLoad"]),
        .target(name: "CPostgresShim", dependencies: ["CPostgres", "CDynamicLoad"]),
        .target(name: "COpenSSLShim", dependencies: ["COpenSSL", "CDynamicLoad"]),
        // libnghttp2 (+ OpenSSL's TLS API) for the push path's own HTTP/2 client (issue 17); libnghttp2 and
        // libz (Expo's gzip bodies) are opened on first use too, so a process without push maps neither.
        .systemLibrary(name: "CNGHTTP2", providers: [.apt(["libnghttp2-dev"])]),
        .target(name: "CNGHTTP2Shim", dependencies: ["CNGHTTP2", "CDynamicLoad"]),
        .target(name: "CZlibShim", dependencies: ["CZlib", "CDynamicLoad"]),
        // The domain and its ports: no C modules, no SQL, no sockets (docs/architecture.md).
        .target(name: "HeraldCore"),
        // SHA-256, HMAC-SHA256 and SHA-1 on OpenSSL's low-level digests (HS256 tokens, server-key hashes, the WebSocket accept value, Redis script names),
        // linked from libcrypto.a: only the archive's members that define them (sha256, sha1, their assembly, cpuid, CRYPTO_memcmp) come in, so
        // a token check maps no libcrypto.so (issue 17). Every other OpenSSL function is COpenSSLShim's forwarder, which the archive never replaces.
        .target(name: "Digests", dependencies: ["COpenSSL"], linkerSettings: [.linkedLibrary(":libcrypto.a")]),
        .target(name: "Realtime", dependencies: ["HeraldCore", "Digests", "CLinux"]),
        // The in-process Broker and PresenceStore adapters; only the executable (and tests) use them.
        .target(name: "RealtimeMemory", dependencies: ["HeraldCore"]),
        // The Broker, PresenceStore and control bus on Redis (HERALD_BROKER=redis://…, SC-1).
        .target(name: "RealtimeRedis", dependencies: ["HeraldCore", "Digests", "RealtimeMemory", "CHiredis", "CHiredisShim"]),
        // The Storage port's adapter on SQLite; only the executable (and its own tests) import it.
        .target(name: "StorageSQLite", dependencies: ["HeraldCore", "CSQLite"]),
        // The Storage port's adapter on PostgreSQL (libpq), for several nodes on one database (SC-1).
        .target(name: "StoragePostgres", dependencies: ["HeraldCore", "CPostgres", "CPostgresShim"]),
        // Push: the HTTP/2 client and JOSE, and one adapter per provider (the queue worker is in HeraldCore).
        .target(name: "PushHTTP", dependencies: ["HeraldCore", "Digests", "COpenSSL", "COpenSSLShim", "CCurl", "CCurlShim", "CNGHTTP2", "CNGHTTP2Shim", "CLinux"]),
        .target(name: "PushAPNs", dependencies: ["HeraldCore", "PushHTTP"]),
        .target(name: "PushFCM", dependencies: ["HeraldCore", "PushHTTP"]),
        // Expo's push service (PU-8a): batched sends, gzip request bodies, receipts.
        .target(name: "PushExpo", dependencies: ["HeraldCore", "PushHTTP", "CZlib", "CZlibShim"]),
        .target(name: "PushWebPush", dependencies: ["HeraldCore", "PushHTTP", "COpenSSL", "COpenSSLShim"]),
        .target(name: "API", dependencies: ["HeraldCore", "Digests", "Realtime", "PushHTTP", "COpenSSL", "COpenSSLShim"]),
        // Only the executable knows which adapters exist: it builds them from the settings.
        .executableTarget(name: "herald", dependencies: ["HeraldCore", "API", "Realtime", "RealtimeMemory", "RealtimeRedis", "StorageSQLite", "StoragePostgres",
                                                         "PushHTTP", "PushAPNs", "PushFCM", "PushExpo", "PushWebPush", "COpenSSLShim"]),
        // The delivery worker's tests run on the real adapters in memory: SQLite on `:memory:` (ADR 0001)
        // and the memory presence store.
        // The seeded mutation loops' engine and corpus reader (Tests/Fuzz, docs/conformance.md "Fuzzing").
        .target(name: "FuzzSupport", path: "Tests/FuzzSupport"),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "StorageSQLite", "RealtimeMemory", "FuzzSupport"]),
        .testTarget(name: "DigestsTests", dependencies: ["Digests"]),
        .testTarget(name: "RealtimeTests", dependencies: ["Realtime", "RealtimeMemory", "FuzzSupport"]),
        .testTarget(name: "RealtimeMemoryTests", dependencies: ["RealtimeMemory"]),
        // Loopback sockets at a kernel-picked port, for the tests that need a listener or a port.
        .target(name: "LoopbackSockets", path: "Tests/LoopbackSockets"),
        .testTarget(name: "RealtimeRedisTests", dependencies: ["RealtimeRedis", "HeraldCore", "LoopbackSockets"]),
        .testTarget(name: "StorageSQLiteTests", dependencies: ["HeraldCore", "StorageSQLite"]),
        // The storage contract on both adapters; PostgreSQL is started by the tests themselves.
        .testTarget(name: "StoragePostgresTests", dependencies: ["HeraldCore", "StoragePostgres", "StorageSQLite", "LoopbackSockets"]),
        .target(name: "PushTestSupport", dependencies: ["HeraldCore", "PushHTTP", "COpenSSL", "COpenSSLShim"], path: "Tests/PushTestSupport"),
        .testTarget(name: "PushHTTPTests", dependencies: ["PushHTTP", "PushTestSupport", "CDynamicLoad", "CNGHTTP2Shim", "LoopbackSockets"]),
        .testTarget(name: "PushAPNsTests", dependencies: ["PushAPNs", "PushTestSupport"]),
        .testTarget(name: "PushFCMTests", dependencies: ["PushFCM", "PushTestSupport"]),
        // inflate checks what was sent: linked from libz here, which the shim's forwarders leave alone.
        .testTarget(name: "PushExpoTests", dependencies: ["PushExpo", "PushTestSupport", "CZlib"], linkerSettings: [.linkedLibrary("z")]),
        .testTarget(name: "PushWebPushTests", dependencies: ["PushWebPush", "PushTestSupport"]),
        .testTarget(name: "APITests", dependencies: ["HeraldCore", "API", "Realtime", "RealtimeMemory", "PushHTTP", "FuzzSupport"],
                    exclude: ["Fixtures"]),
    ]
)
