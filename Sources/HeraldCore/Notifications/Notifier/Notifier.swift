import Foundation
import Synchronization

/// The one choke point (NO-1, NO-2): stores a notification per recipient, broadcasts its
/// invalidation event on `user:{id}`, then plans pushes — only to devices whose session did not
/// see the event live in the foreground. Never both, never neither:
///
/// 1. one writer transaction stores the rows and the call's plan (a `PendingPlan`, claimed by this
///    node with a lease), and reserves the idempotency key;
/// 2. after the commit, the events are published (so a reader who took `Herald-Cursor` before its
///    GET either sees the row or gets the event);
/// 3. once every loop has written what was queued before (`afterPendingDeliveries`), presence says
///    which connections received each event;
/// 4. a second transaction decides per device, enqueues `push.deliver` jobs, writes the delivery
///    record and the live event's cursor, and deletes the plan (fenced: only while this node holds it).
///
/// A crash between 1 and 4 leaves the plan; `recover()` (at start and periodically) claims plans
/// whose lease is over, re-broadcasts and plans those calls, so a stored notification is never
/// left unpushed, and a live call's plan is never taken from it (DESIGN "Plan ownership").
public final class Notifier: Sendable {
    let database: any Storage
    let broker: any Broker
    let presence: any PresenceStore
    let barrier: any DeliveryBarrier
    /// The providers with credentials; nil: none, and devices are recorded `failed` (PU-6).
    let providers: PushProviders?
    /// Told after a planning transaction queued pushes for a claim, so the worker claims them at once.
    let pushQueued: (@Sendable () -> Void)?
    /// This node's worker: a push due now is leased to it at insert and handed over after the
    /// planning commit when it has room (ADR 0007); nil: every push is queued for a claim.
    let worker: DeliveryWorker?
    /// Paces calls by the push jobs the worker has not claimed (issue 17); nil: never waits.
    let pushBacklog: PushBacklog?
    let clock: any Clock
    let log: Logger
    /// The `default` app's catalog, exclusions, default locale and payload options.
    public let defaultProfile: AppProfile
    /// The profile of a stored app, as its settings are now (nil: no such app).
    let storedProfile: @Sendable (String) -> AppProfile?
    /// Names this process as the holder of the plans it stores or claims (`claimed_by`).
    public let nodeID: String
    let recovery = DispatchQueue(label: "herald.notifier.recovery")
    /// A `recoverSoon()` run is queued on `recovery` and has not started.
    let recoveryAsked = Atomic<Bool>(false)
    /// Where a batch goes after its storing commit, so the writer's queue only runs SQL.
    let afterCommit = DispatchQueue(label: "herald.notifier.after-commit")
    /// Since start: notifications stored, and planning outcomes (`/metrics`).
    let counts = Mutex(Counts())

    /// `metrics`' counters as fields: four updates of a dictionary keyed by name were ~2k
    /// instructions of every planned call (issue 17).
    struct Counts {
        var stored = 0, liveDelivered = 0, queued = 0, suppressedForeground = 0, skipped = 0
        /// Whether any call was planned: the outcomes are listed from then on, as before.
        var planned = false
    }
    /// Resumed at once with no schedule (a source released while suspended crashes Dispatch);
    /// `start` schedules it. Dispatch sources are thread-safe.
    nonisolated(unsafe) let timer: any DispatchSourceTimer

    /// How long an idempotency key answers with its first result (NO-1: 24 h).
    static let idempotencyWindowMilliseconds: Int64 = 24 * 3600 * 1000
    /// Most members a scope rule may reach in one call.
    static let maxScopeRecipients = 10_000
    /// How long a plan is held by the node that stored or claimed it before recovery (on any
    /// node) may take it over; recovery renews it while planning.
    static let planLeaseMilliseconds: Int64 = 60_000
    /// Longest wait for the loops to write a batch's events before presence is asked (a wedged
    /// loop's connections then count as not having received them).
    static let barrierTimeoutNanoseconds: UInt64 = 1_000_000_000
    /// The live event every recipient gets on `user:{id}`.
    static let createdEvent = EventName("notification.created")!

    /// - Parameters:
    ///   - database: the unit of work over notifications, plans, devices, preferences, members,
    ///     idempotency keys, deliveries and jobs.
    ///   - broker: where the `notification.created` events (and a call's `live` message) go.
    ///   - presence: answers which connections received an event in the foreground (NO-2).
    ///   - barrier: the point after which presence knows who received what was published.
    ///   - providers: the push providers with credentials; nil when none has (devices are then
    ///     recorded `failed`).
    ///   - catalog: the `default` app's kinds (`HERALD_CATALOG_PATH`), or `.empty`.
    ///   - payload: the `default` app's payload options (`HERALD_PAYLOAD_ROOT_KEY`); flat by default.
    ///   - profiles: the profile of any other app by id, as its settings are now (ADR 0006); nil
    ///     for an app that does not exist (any more): its calls are then planned with an empty
    ///     catalog and flat payloads.
    ///   - clock: wall time for rows, expiry and leases; tests pass a `ManualClock`.
    ///   - log: what an operator should see (failures, recovery).
    ///   - nodeID: the name this process holds plans under; unique per process by default. On
    ///     PostgreSQL `herald` passes `PostgresStorage.holdPlans()`'s, whose session lock tells
    ///     other nodes when this process is gone (ADR 0023).
    ///   - pushQueued: called after pushes were queued for a claim (wakes the delivery worker).
    ///   - pushBacklog: paces calls by the jobs queued for a claim and not claimed yet; nil: never waits.
    ///   - worker: this node's delivery worker, to lease due pushes to at insert (ADR 0007); nil:
    ///     they are queued and claimed.
    public init(database: any Storage, broker: any Broker, presence: any PresenceStore, barrier: any DeliveryBarrier,
                providers: PushProviders?, catalog: NotificationCatalog, payload: PayloadOptions = .flat,
                profiles: @escaping @Sendable (String) -> AppProfile? = { _ in nil },
                clock: any Clock = SystemClock(), log: Logger = .silent,
                nodeID: String? = nil, pushQueued: (@Sendable () -> Void)? = nil, pushBacklog: PushBacklog? = nil,
                worker: DeliveryWorker? = nil) {
        self.database = database
        self.broker = broker
        self.presence = presence
        self.barrier = barrier
        self.providers = providers
        self.pushQueued = pushQueued
        self.pushBacklog = pushBacklog
        self.worker = worker
        self.clock = clock
        self.log = log
        self.defaultProfile = AppProfile(app: "default", catalog: catalog, payload: payload)
        self.storedProfile = profiles
        self.nodeID = nodeID ?? Self.newID("node", now: clock.unixMilliseconds)
        self.timer = DispatchSource.makeTimerSource(queue: recovery)
        timer.resume()
    }

    enum Stored: Sendable {
        case replay(String)
        /// The idempotency key's call was stored, and its planning failed or a crash cut it
        /// short: its provisional answer, until recovery plans it.
        case replayDeferred(String)
        /// `plan`: where the call's plan is held; nil when it reached nobody.
        case fresh([NotificationRecord], skipped: [(userID: String, reason: String)], plan: PlanHold?)
    }

    /// One call waiting for its turn in a batch.
    ///
    /// A class, as `Planning`: a call passes through the intake, the batch, the storing unit
    /// and its answer, and as a struct each pass copied its request field by field.
    final class Call: Sendable {
        let request: NotificationCall
        let completion: @Sendable (NotificationAnswer) -> Void

        init(request: NotificationCall, completion: @escaping @Sendable (NotificationAnswer) -> Void) {
            self.request = request
            self.completion = completion
        }
    }

    /// One call's stored rows on their way to being broadcast and planned.
    ///
    /// A class: a call's planning passes through the batch, the loop barrier, presence, the
    /// planning unit and its answer, and as a struct each pass (a loop's iteration, a closure's
    /// capture) copied its rows, plan and texts, a retain and a release of each of their strings
    /// (issue 17: ~180 of them a notification).
    final class Planning: Sendable {
        /// The app of the call (of every stored row).
        let app: String
        let stored: [NotificationRecord]
        let plan: NotificationPlan
        let live: PublishRequest?
        let skipped: [(userID: String, reason: String)]
        /// The stored plan, held by this node, that planning ends (a plan row it deletes, or the
        /// plan its only row carries); nil when there is none.
        let pending: PlanHold?
        let completion: @Sendable (Result<Outcome, PlanningDeferred>) -> Void

        init(app: String, stored: [NotificationRecord], plan: NotificationPlan, live: PublishRequest?,
             skipped: [(userID: String, reason: String)], pending: PlanHold?,
             completion: @escaping @Sendable (Result<Outcome, PlanningDeferred>) -> Void) {
            self.app = app
            self.stored = stored
            self.plan = plan
            self.live = live
            self.skipped = skipped
            self.pending = pending
            self.completion = completion
        }
    }

    /// A call stored and not planned: its answer so far (ids, event ids, skipped recipients,
    /// `planningDeferred`) and why planning did not happen here.
    struct PlanningDeferred: Error {
        let outcome: Outcome
        let error: any Error
    }

    /// Calls waiting for the writer, and whether a batch is being stored now. Group commit: while
    /// one batch is in the writer, the calls that arrive queue here and go together in the next
    /// one — one transaction, one publish, one loop barrier and one planning transaction per batch
    /// instead of per call.
    let intake = Mutex<(pending: [Call], storing: Bool)>(([], false))
    /// Whether a batch's pushes are made before its planning unit (`preparePushes`): while the
    /// last planned batch queued a push for at least half its notifications.
    let preparesPushes = Atomic<Bool>(true)
    /// Calls stored (or claimed by recovery) and not yet planned: what `drain` waits for. Who
    /// owns a plan is the database's lease, not this count.
    let planning = Mutex<Int>(0)
    /// Most calls stored in one transaction.
    static let maxBatch = 128
    /// Idempotency keys of calls stored by this process and not answered yet: a repeat of one is
    /// `idempotencyInProgress`; a repeat of a key stored but not complete and not here (planning
    /// failed, or the process that stored it died) gets the stored provisional answer instead.
    let keysInFlight = Mutex<Set<String>>([])

    /// Runs one `POST /v1/notifications` call (NO-1): stored, broadcast and planned together with
    /// the calls that arrive meanwhile (group commit).
    ///
    /// - Parameter completion: called once, on a storage or dispatch thread, with the answer:
    ///   `.created`, `.replayed` for an idempotency key's repeat, `.refused`, or `.failed`.
    public func send(_ call: NotificationCall, completion: @escaping @Sendable (NotificationAnswer) -> Void) {
        let first = intake.withLock { intake -> Bool in
            intake.pending.append(Call(request: call, completion: completion))
            guard !intake.storing else { return false }
            intake.storing = true
            return true
        }
        if first { storeBatch() }
    }

    /// The `default` app's catalog.
    public var catalog: NotificationCatalog { defaultProfile.catalog }

    /// The `default` app's payload options.
    public var payload: PayloadOptions { defaultProfile.payload }

    /// What applies to `app`'s calls now: the environment's for `default`, a stored app's settings
    /// otherwise, and an empty catalog with flat payloads for an app that is gone.
    public func profile(_ app: String) -> AppProfile {
        if app == "default" { return defaultProfile }
        return storedProfile(app) ?? AppProfile(app: app, catalog: .empty)
    }

    /// Notifications stored and planned since start, and planning outcomes
    /// (`live_delivered`, `queued`, `suppressed_foreground`, `skipped`) for `/metrics`.
    public var metrics: (stored: Int, outcomes: [String: Int]) {
        let counts = counts.withLock { $0 }
        guard counts.planned else { return (counts.stored, [:]) }
        return (counts.stored, ["live_delivered": counts.liveDelivered, "queued": counts.queued,
                                "suppressed_foreground": counts.suppressedForeground, "skipped": counts.skipped])
    }
}
