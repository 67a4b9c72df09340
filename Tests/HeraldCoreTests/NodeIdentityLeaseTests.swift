import HeraldCore
import Synchronization
import Testing

/// A `NodeIdentityStore` in memory whose clock is the test's: what the PostgreSQL adapter does
/// with one row per id and the server's clock, with failures on demand.
final class MemoryNodeIdentityStore: NodeIdentityStore {
    private struct Row { var instance: NodeInstance; var heartbeatAt: Int64 }
    private let clock: ManualClock
    private let rows = Mutex<[String: Row]>([:])
    /// Calls that fail, in order, before the store answers again.
    private let failures = Mutex<[StorageError]>([])

    init(clock: ManualClock) { self.clock = clock }

    func failNext(_ count: Int, with error: StorageError = .unavailable(message: "connection refused")) {
        failures.withLock { $0 += Array(repeating: error, count: count) }
    }

    func holder(of nodeID: String) -> NodeInstance? { rows.withLock { $0[nodeID]?.instance } }

    func claim(_ instance: NodeInstance, staleAfterMilliseconds: Int64, replacing instanceID: String?) throws(StorageError) -> NodeClaimOutcome {
        if let failure = failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw failure }
        let now = clock.unixMilliseconds
        return rows.withLock { rows in
            if let row = rows[instance.nodeID], row.instance.instanceID != instance.instanceID,
               now - row.heartbeatAt < staleAfterMilliseconds, row.instance.instanceID != instanceID {
                return .held(by: NodeHolder(instance: row.instance, heartbeatAgeMilliseconds: now - row.heartbeatAt))
            }
            rows[instance.nodeID] = Row(instance: instance, heartbeatAt: now)
            return .claimed
        }
    }

    func release(_ instance: NodeInstance) throws(StorageError) {
        if let failure = failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw failure }
        rows.withLock { rows in
            if rows[instance.nodeID]?.instance.instanceID == instance.instanceID { rows[instance.nodeID] = nil }
        }
    }
}

/// The lines a `Logger` was given.
final class CapturedLog: Sendable {
    private let lines = Mutex<[(level: Logger.Level, message: String)]>([])

    var logger: Logger {
        Logger { [self] level, message, _ in lines.withLock { $0.append((level, message)) } }
    }

    /// Lines at `level` (any level when nil) whose message contains `fragment`.
    func count(_ level: Logger.Level?, _ fragment: String) -> Int {
        lines.withLock { $0.filter { (level == nil || $0.level == level) && $0.message.contains(fragment) }.count }
    }
}

/// A liveness probe that answers what the test says for each instance id (`.unknown` otherwise).
struct ScriptedLiveness: ProcessLivenessProbe {
    let answers: [String: ProcessLiveness]
    func liveness(of holder: NodeInstance) -> ProcessLiveness { answers[holder.instanceID] ?? .unknown }
}

/// The node id's lease (ADR 0016): the claim at start, the heartbeat's state machine, the window
/// and the same-machine shortcut, each failure path. Time moves only by `ManualClock.advance`.
@Suite struct NodeIdentityLeaseTests {
    let clock = ManualClock()
    let store: MemoryNodeIdentityStore
    let captured = CapturedLog()

    init() { store = MemoryNodeIdentityStore(clock: clock) }

    private var log: Logger { captured.logger }

    private func logged(_ level: Logger.Level, _ fragment: String) -> Int { captured.count(level, fragment) }

    private func instance(_ name: String, pid: Int32 = 100) -> NodeInstance {
        NodeInstance(nodeID: "node-1", instanceID: name, host: "host-\(name)", pid: pid, processKey: "")
    }

    private func lease(_ name: String, pid: Int32 = 100, liveness: any ProcessLivenessProbe = NoProcessLiveness()) -> NodeIdentityLease {
        NodeIdentityLease(store: store, instance: instance(name, pid: pid), configuration: .init(staleAfterMilliseconds: 15_000),
                          liveness: liveness, clock: clock, log: log)
    }

    /// The error `body` threw, nil when it threw none.
    private func refused(_ body: () throws -> Void) -> NodeIdentityError? {
        do {
            try body()
            return nil
        } catch {
            return error as? NodeIdentityError
        }
    }

    @Test func theHeartbeatIsAThirdOfTheWindow() {
        #expect(NodeIdentityLease.Configuration(staleAfterMilliseconds: 15_000).heartbeatMilliseconds == 5_000)
        #expect(NodeIdentityLease.Configuration(staleAfterMilliseconds: 3_000).heartbeatMilliseconds == 1_000)
    }

    @Test func aSecondLiveInstanceIsRefusedNamingTheIdAndTheHolder() throws {
        let a = lease("a", pid: 41)
        try a.acquire()
        #expect(a.status == .held)
        clock.advance(byMilliseconds: 1_200)
        let b = lease("b")
        let refusal = refused { try b.acquire() }
        guard case .held(let id, let holder)? = refusal else {
            Issue.record("the second instance was not refused as held: \(String(describing: refusal))")
            return
        }
        #expect(id == "node-1")
        #expect(holder.instance == instance("a", pid: 41))
        #expect(holder.heartbeatAgeMilliseconds == 1_200)
        #expect("\(refusal!)".contains("HERALD_NODE_ID 'node-1' is held by another live instance (host host-a, pid 41, instance a, last heartbeat 1.2 s ago)"))
        #expect(store.holder(of: "node-1")?.instanceID == "a")
        // The refused instance never heartbeats: it cannot take the id later by itself.
        clock.advance(byMilliseconds: 60_000)
        #expect(b.heartbeat() == .unclaimed)
        #expect(store.holder(of: "node-1")?.instanceID == "a")
    }

    @Test func aCrashedHoldersIdIsFreeAfterTheWindowAndNotBefore() throws {
        try lease("a").acquire()  // then never heartbeats: a kill -9 on another machine
        clock.advance(byMilliseconds: 14_999)
        #expect(throws: NodeIdentityError.self) { try lease("b").acquire() }
        clock.advance(byMilliseconds: 1)
        let c = lease("c")
        try c.acquire()
        #expect(c.status == .held && store.holder(of: "node-1")?.instanceID == "c")
    }

    @Test(arguments: [(ProcessLiveness.dead, true), (.alive, false), (.unknown, false)])
    func aHolderWhoseProcessIsGoneIsReplacedAtOnce(_ answer: ProcessLiveness, _ replaced: Bool) throws {
        try lease("a").acquire()
        let b = lease("b", liveness: ScriptedLiveness(answers: ["a": answer]))
        if replaced {
            try b.acquire()
            #expect(store.holder(of: "node-1")?.instanceID == "b")
            #expect(logged(.info, "took over HERALD_NODE_ID from an instance whose process is gone") == 1)
        } else {
            #expect(throws: NodeIdentityError.self) { try b.acquire() }
            #expect(store.holder(of: "node-1")?.instanceID == "a")
        }
    }

    @Test func heartbeatsKeepTheIdPastManyWindows() throws {
        let a = lease("a")
        try a.acquire()
        for _ in 0..<10 {
            clock.advance(byMilliseconds: a.configuration.heartbeatMilliseconds)
            #expect(a.heartbeat() == .held)
            #expect(throws: NodeIdentityError.self) { try lease("b").acquire() }
        }
        #expect(captured.count(nil, "") == 0)
    }

    @Test func postgresDownAtStartRefusesTheClaimAndNothingHeartbeats() {
        store.failNext(1)
        let a = lease("a")
        let refusal = refused { try a.acquire() }
        guard case .unavailable(let id, let error)? = refusal else {
            Issue.record("the claim did not fail as unavailable: \(String(describing: refusal))")
            return
        }
        #expect(id == "node-1")
        #expect(error == .unavailable(message: "connection refused"))
        #expect("\(refusal!)".contains("HERALD_NODE_ID 'node-1' could not be claimed"))
        #expect(a.status == .unclaimed)
        #expect(a.heartbeat() == .unclaimed)
        #expect(store.holder(of: "node-1") == nil)
    }

    @Test func aHeartbeatFailingWithinTheWindowIsLoggedOnceAndTheHoldStays() throws {
        let a = lease("a")
        try a.acquire()
        store.failNext(2)
        clock.advance(byMilliseconds: 5_000)
        #expect(a.heartbeat() == .held)
        clock.advance(byMilliseconds: 5_000)
        #expect(a.heartbeat() == .held)
        #expect(logged(.warning, "node id heartbeat failed") == 1)
        clock.advance(byMilliseconds: 4_999)
        #expect(a.heartbeat() == .held)
        #expect(logged(.info, "node id heartbeat written again") == 1)
        #expect(logged(.error, "") == 0)
    }

    @Test func aRunningNodeFindsItsIdTakenSaysSoAndTakesItBackWhenFree() throws {
        let a = lease("a")
        try a.acquire()
        // A's heartbeats fail for the whole window (a partition between it and the database)…
        store.failNext(3)
        for _ in 0..<3 {
            clock.advance(byMilliseconds: 5_000)
            a.heartbeat()
        }
        #expect(a.status == .lapsed)
        #expect(logged(.error, "node id heartbeat failing for the whole window") == 1)
        #expect(a.readinessProblem == nil && a.conflict == nil)
        // …so a node started with its id now takes it as stale.
        let b = lease("b", pid: 7)
        try b.acquire()
        clock.advance(byMilliseconds: 2_000)
        let status = a.heartbeat()
        guard case .taken(let holder) = status else {
            Issue.record("A did not see B: \(status)")
            return
        }
        #expect(holder.instance == instance("b", pid: 7) && holder.heartbeatAgeMilliseconds == 2_000)
        #expect(a.conflict == holder)
        #expect(a.readinessProblem == "node id 'node-1' is held by another instance: host host-b, pid 7, instance b, last heartbeat 2.0 s ago")
        #expect(logged(.error, "HERALD_NODE_ID is held by another live instance") == 1)
        // Said once, not at every heartbeat while it lasts.
        clock.advance(byMilliseconds: 1_000)
        #expect(b.heartbeat() == .held)
        #expect(a.heartbeat() != .held)
        #expect(logged(.error, "HERALD_NODE_ID is held by another live instance") == 1)
        #expect(store.holder(of: "node-1")?.instanceID == "b")
        // B stops: A takes its id back and is ready again.
        #expect(b.release())
        #expect(a.heartbeat() == .held)
        #expect(a.conflict == nil && a.readinessProblem == nil)
        #expect(logged(.warning, "HERALD_NODE_ID is this instance's again") == 1)
    }

    @Test func releaseDeletesOnlyAHoldThisInstanceHas() throws {
        let a = lease("a")
        try a.acquire()
        let b = lease("b")
        #expect(throws: NodeIdentityError.self) { try b.acquire() }
        #expect(!b.release())  // taken by A: nothing of A's is deleted
        #expect(store.holder(of: "node-1")?.instanceID == "a")
        #expect(a.release())
        #expect(a.status == .released && store.holder(of: "node-1") == nil)
        #expect(a.heartbeat() == .released)
        #expect(store.holder(of: "node-1") == nil)
        // A restart (a new instance) claims at once after a graceful stop.
        try lease("a2").acquire()
    }

    @Test func aReleaseThatFailsIsLoggedAndLeavesTheRecordToGoStale() throws {
        let a = lease("a")
        try a.acquire()
        store.failNext(1)
        #expect(!a.release())
        #expect(logged(.warning, "node id not given up") == 1)
        #expect(a.status == .released)
        clock.advance(byMilliseconds: 15_000)
        try lease("b").acquire()
    }
}
