import Dispatch
import Foundation
import HeraldCore
import LoopbackSockets
@testable import StoragePostgres
import Testing

/// `PostgresNodeIdentityStore` (ADR 0016) on a real server: one holder per id, the window in the
/// server's clock, the replacement of a dead holder, claims racing, and the server refusing
/// connections at the claim and mid-run.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct NodeIdentityStoreTests {
    private func instance(_ name: String, node: String = "node-1") -> NodeInstance {
        NodeInstance(nodeID: node, instanceID: name, host: "host-\(name)", pid: 4_000, processKey: "boot/pid:[1]/4000/\(name)")
    }

    /// A new migrated database, a store on it and a plain connection for what the test changes by hand.
    private func withStore(_ body: (PostgresNodeIdentityStore, PostgresConnection, String) throws -> Void) throws {
        let server = try #require(PostgresServer.shared)
        let url = try server.makeDatabase()
        try PostgresStorage.migrate(PostgresConfiguration(url: url))
        let store = PostgresNodeIdentityStore(configuration: PostgresConfiguration(url: url))
        defer { store.close() }
        let connection = try PostgresConnection(conninfo: url, sessionSetup: "SELECT 1")
        defer { connection.close() }
        try body(store, connection, url)
    }

    @Test func oneInstanceHoldsAnIdUntilItReleasesIt() throws {
        try withStore { store, _, _ in
            let a = instance("a"), b = instance("b")
            #expect(try store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            guard case .held(let holder) = try store.claim(b, staleAfterMilliseconds: 15_000, replacing: nil) else {
                Issue.record("b got a held id")
                return
            }
            #expect(holder.instance == a)
            #expect(holder.heartbeatAgeMilliseconds >= 0 && holder.heartbeatAgeMilliseconds < 5_000)
            // The holder's heartbeat is the same claim; another id is another row.
            #expect(try store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            #expect(try store.claim(instance("b", node: "node-2"), staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            // A release by a non-holder deletes nothing.
            try store.release(b)
            #expect(try store.claim(b, staleAfterMilliseconds: 15_000, replacing: nil) != .claimed)
            try store.release(a)
            #expect(try store.claim(b, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
        }
    }

    @Test func aHeartbeatOlderThanTheWindowByTheServersClockFreesTheId() throws {
        try withStore { store, connection, _ in
            let a = instance("a"), b = instance("b")
            #expect(try store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            try connection.run("UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 10000")
            guard case .held(let holder) = try store.claim(b, staleAfterMilliseconds: 15_000, replacing: nil) else {
                Issue.record("a 10 s old heartbeat was taken as stale")
                return
            }
            #expect(holder.heartbeatAgeMilliseconds >= 10_000 && holder.heartbeatAgeMilliseconds < 15_000)
            try connection.run("UPDATE cluster_nodes SET heartbeat_at = heartbeat_at - 5000")
            #expect(try store.claim(b, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            let row = try #require(try connection.queryOne("SELECT instance_id, host, pid, process_key, claimed_at, heartbeat_at FROM cluster_nodes"))
            #expect(try row.value("instance_id", as: String.self) == "b")
            #expect(try row.value("host", as: String.self) == "host-b")
            #expect(try row.value("process_key", as: String.self) == "boot/pid:[1]/4000/b")
            // A heartbeat keeps the claim's time.
            let claimedAt = try row.value("claimed_at", as: Int64.self)
            #expect(try store.claim(b, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            #expect(try connection.queryOne("SELECT claimed_at FROM cluster_nodes")?.value("claimed_at", as: Int64.self) == claimedAt)
        }
    }

    @Test func onlyTheNamedDeadInstanceIsReplacedBeforeTheWindow() throws {
        try withStore { store, _, _ in
            let a = instance("a"), b = instance("b")
            #expect(try store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            #expect(try store.claim(b, staleAfterMilliseconds: 15_000, replacing: "someone-else") != .claimed)
            #expect(try store.claim(b, staleAfterMilliseconds: 15_000, replacing: "a") == .claimed)
            // A's "heartbeat" after that finds B.
            guard case .held(let holder) = try store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil) else {
                Issue.record("a took its id back from a live holder")
                return
            }
            #expect(holder.instance == b)
        }
    }

    @Test func instancesClaimingAtOnceGetOneHolder() throws {
        try withStore { store, _, url in
            let others = (0..<5).map { _ in PostgresNodeIdentityStore(configuration: PostgresConfiguration(url: url)) }
            defer { for other in others { other.close() } }
            let stores = [store] + others
            let outcomes = Shared<[NodeClaimOutcome]>([])
            DispatchQueue.concurrentPerform(iterations: stores.count) { n in
                if let outcome = try? stores[n].claim(instance("i\(n)"), staleAfterMilliseconds: 15_000, replacing: nil) {
                    outcomes.update { $0.append(outcome) }
                }
            }
            #expect(outcomes.value.count == stores.count)
            #expect(outcomes.value.filter { $0 == .claimed }.count == 1)
        }
    }

    @Test func aServerThatCannotBeReachedFailsTheClaimAsUnavailable() throws {
        let port = try #require(LoopbackSocket.freePort())
        let store = PostgresNodeIdentityStore(configuration: PostgresConfiguration(url: "postgres://postgres@127.0.0.1:\(port)/herald"))
        defer { store.close() }
        #expect {
            _ = try store.claim(instance("a"), staleAfterMilliseconds: 15_000, replacing: nil)
        } throws: { error in
            guard let error = error as? StorageError, case .unavailable = error else { return false }
            return true
        }
    }

    @Test func aHeartbeatFailsWhileTheServerRefusesAndSucceedsWhenItIsBack() throws {
        let server = try #require(PostgresServer.shared)
        try withStore { store, _, url in
            let a = instance("a")
            #expect(try store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil) == .claimed)
            let name = String(url.split(separator: "/").last!)
            let admin = try PostgresConnection(conninfo: server.url(database: "postgres"), sessionSetup: "SELECT 1")
            defer { admin.close() }
            try admin.execute("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
            _ = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1::text AND pid <> pg_backend_pid()", [name])
            #expect(throws: StorageError.self) { _ = try store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil) }
            try admin.execute("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
            // After the connector's backoff (at most 2 s), the next heartbeat connects again.
            var outcome: NodeClaimOutcome?
            _ = eventually {
                outcome = try? store.claim(a, staleAfterMilliseconds: 15_000, replacing: nil)
                return outcome != nil
            }
            #expect(outcome == .claimed)
        }
    }
}
