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
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CCurlShim", dependencies: ["CCurl"]),
        // The domain and its ports: no C modules, no SQL, no sockets (docs/architecture.md).
        .target(name: "HeraldCore"),
        .target(name: "Realtime", dependencies: ["HeraldCore", "CLinux", "COpenSSL"]),
        // The in-process Broker and PresenceStore adapters; only the executable (and tests) use them.
        .target(name: "RealtimeMemory", dependencies: ["HeraldCore"]),
        // The Storage port's adapter on SQLite; only the executable (and its own tests) import it.
        .target(name: "StorageSQLite", dependencies: ["HeraldCore", "CSQLite"]),
        .target(name: "PushBridge", dependencies: ["HeraldCore", "COpenSSL", "CCurl", "CCurlShim"]),
        .target(name: "API", dependencies: ["HeraldCore", "Realtime", "PushBridge", "COpenSSL"]),
        .executableTarget(name: "herald", dependencies: ["HeraldCore", "API", "Realtime", "RealtimeMemory", "StorageSQLite"]),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore"]),
        .testTarget(name: "RealtimeTests", dependencies: ["Realtime", "RealtimeMemory"]),
        .testTarget(name: "RealtimeMemoryTests", dependencies: ["RealtimeMemory"]),
        .testTarget(name: "StorageSQLiteTests", dependencies: ["HeraldCore", "StorageSQLite"]),
        .testTarget(name: "PushBridgeTests", dependencies: ["PushBridge"]),
        .testTarget(name: "APITests", dependencies: ["HeraldCore", "API", "Realtime", "RealtimeMemory", "PushBridge"], exclude: ["Fixtures"]),
    ]
)
