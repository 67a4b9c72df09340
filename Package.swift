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
        .target(name: "Realtime", dependencies: ["CLinux", "COpenSSL"]),
        .target(name: "Storage", dependencies: ["CSQLite"]),
        .target(name: "PushBridge", dependencies: ["Storage", "COpenSSL", "CCurl", "CCurlShim"]),
        .target(name: "API", dependencies: ["Realtime", "PushBridge", "Storage", "COpenSSL"]),
        .executableTarget(name: "herald", dependencies: ["API", "Realtime", "Storage"]),
        .testTarget(name: "RealtimeTests", dependencies: ["Realtime"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage"]),
        .testTarget(name: "PushBridgeTests", dependencies: ["PushBridge"]),
        .testTarget(name: "APITests", dependencies: ["API", "Realtime", "Storage", "PushBridge"], exclude: ["Fixtures"]),
    ]
)
