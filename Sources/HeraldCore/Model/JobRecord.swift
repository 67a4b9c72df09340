import Foundation

/// A job's place in its life: `queued` (due at `run_at`), `leased` (a worker has it until
/// `lease_until`), `done`, or `dead` (given up; listed and retried through the server API).
public enum JobState: String, Sendable, CaseIterable {
    case queued, leased, done, dead
}

/// One durable job (PU-5), e.g. `push.deliver` for one device.
public struct JobRecord: Sendable, Equatable {
    public var id: Int64
    public var kind: String
    /// The app whose job it is (ADR 0006): the device's app for a push; `default` for jobs
    /// queued before schema 13 whose device was gone.
    public var app: String
    /// The job's input, JSON text.
    public var payloadJSON: String
    public var state: JobState
    /// Attempts started so far (a claim counts as one). Also the lease's fencing number.
    public var attempts: Int
    /// Of `attempts`, those retried as never having reached the provider (`JobQueue.retry`'s
    /// `countsAttempt: false`): they do not count toward the retry policy's attempt cap.
    public var uncountedAttempts: Int
    /// Of `uncountedAttempts`, those turned away for their turn (`JobAttempt.turnedAway`: Web
    /// Push's `origin_busy`, ADR 0024): they do not grow the backoff of a later failure either.
    public var turnedAwayAttempts: Int
    /// Unix ms of the first claim since the job was queued (or retried from the dead letters):
    /// where the retry time budget starts. Nil before the first claim.
    public var firstAttemptAt: Int64?
    /// Unix ms at which the job is due.
    public var runAt: Int64
    /// Unix ms until which a worker holds it; past it, the job is due again (crash recovery).
    public var leaseUntil: Int64?
    public var lastError: String?
    public var createdAt: Int64
    /// Unix ms the job was dead-lettered; nil unless `dead` (and for jobs that died before schema 6).
    public var deadAt: Int64?
    /// Why and where a dead job died (bulk retry by reason and provider); nil unless `dead`.
    public var deadCause: DeadLetterCause?

    public init(id: Int64, kind: String, payloadJSON: String, state: JobState, attempts: Int, runAt: Int64, leaseUntil: Int64?,
                lastError: String?, createdAt: Int64, deadAt: Int64? = nil, uncountedAttempts: Int = 0, firstAttemptAt: Int64? = nil,
                deadCause: DeadLetterCause? = nil, app: String = AppID.default.rawValue, turnedAwayAttempts: Int = 0) {
        self.id = id
        self.kind = kind
        self.app = app
        self.payloadJSON = payloadJSON
        self.state = state
        self.attempts = attempts
        self.uncountedAttempts = uncountedAttempts
        self.turnedAwayAttempts = turnedAwayAttempts
        self.firstAttemptAt = firstAttemptAt
        self.runAt = runAt
        self.leaseUntil = leaseUntil
        self.lastError = lastError
        self.createdAt = createdAt
        self.deadAt = deadAt
        self.deadCause = deadCause
    }

    /// The attempts that count toward the retry policy's cap: `attempts − uncountedAttempts`.
    public var countedAttempts: Int { attempts - uncountedAttempts }

    /// The attempts the retry backoff grows with: `attempts − turnedAwayAttempts`. A push turned
    /// away for its turn says nothing about its provider, so its retries leave the next real
    /// failure's backoff where it was (audience14: eight turn-aways made it 2^8 s, capped at 2 min).
    public var backoffAttempts: Int { attempts - turnedAwayAttempts }

    /// The fencing token of the claim that leased it: its id and attempt number. Meaningful for a
    /// job returned by `claim`; a later claim (after the lease ran out) counts another attempt,
    /// so this one no longer completes, retries or dead-letters the job.
    public var lease: JobLease { JobLease(jobID: id, attempt: attempts) }
}

/// Proof of one claim of a job (its fencing token): complete, retry and dead-letter succeed only
/// while the job is still leased under this attempt, so a worker whose lease ran out and whose
/// job another claim took over cannot record an outcome for it.
public struct JobLease: Hashable, Sendable {
    public let jobID: Int64
    /// The job's attempt count right after the claim.
    public let attempt: Int

    public init(jobID: Int64, attempt: Int) {
        self.jobID = jobID
        self.attempt = attempt
    }
}

/// Why a job was dead-lettered, kept with it so dead letters can be retried by cause (after an
/// outage of one provider, a credentials fix). Nil columns for jobs that died before schema 7,
/// except what migration 7 could recover (see `HeraldSchema`).
public struct DeadLetterCause: Sendable, Equatable {
    /// The push provider the job was for (`devices.provider`, e.g. `apns`); nil when unknown (the
    /// device was gone, the payload unreadable, or not a push job).
    public var provider: String?
    /// The reason's code: the outcome reason up to its first `:` (`ServiceUnavailable`,
    /// `transport_error`, `provider_misconfigured`, `push_not_configured`…), the same text that
    /// starts the job's `last_error`. At most 128 bytes.
    public var reason: String

    public init(provider: String?, reason: String) {
        self.provider = provider
        self.reason = reason
    }

    /// The code of an outcome reason: the text before its first `:`, trimmed, cut at 128 bytes
    /// (`"transport_error: CURLE_…"` → `transport_error`; `"ServiceUnavailable"` unchanged).
    public static func code(of reason: String) -> String {
        let head = reason.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? reason
        var code = head.trimmingCharacters(in: .whitespaces)
        while code.utf8.count > 128 { code.removeLast() }
        return code
    }
}

/// Which dead jobs a bulk retry sends back to the queue. Every condition given must hold.
public struct DeadJobFilter: Sendable, Equatable {
    /// Only this app's jobs (ADR 0006): a server key retries its own app's dead letters only.
    public var app: AppID
    /// Only jobs of this kind (e.g. `push.deliver`); nil: any kind.
    public var kind: String?
    /// Only jobs dead-lettered at or after this unix ms; nil: whenever. Jobs that died before
    /// schema 6 have no such time and match only when this and `deadUntil` are nil.
    public var deadSince: Int64?
    /// Only jobs dead-lettered before this unix ms (exclusive); nil: up to now.
    public var deadUntil: Int64?
    /// Only jobs for this push provider (`DeadLetterCause.provider`); nil: any, unknown included.
    public var provider: String?
    /// Only jobs whose `DeadLetterCause.reason` is exactly this; nil: any.
    public var reason: String?

    public init(app: AppID = .default, kind: String? = nil, deadSince: Int64? = nil, deadUntil: Int64? = nil, provider: String? = nil,
                reason: String? = nil) {
        self.app = app
        self.kind = kind
        self.deadSince = deadSince
        self.deadUntil = deadUntil
        self.provider = provider
        self.reason = reason
    }
}

extension DeadJobFilter {
    /// A filter field, named as the server API's body names it (`POST /v1/jobs/retry`).
    public enum Field: String, Sendable, Equatable {
        case kind, deadSince = "dead_since", deadUntil = "dead_until", provider, reason
    }

    /// Why filter values are refused: the field and a message for the operator.
    public struct Invalid: Error, Equatable, Sendable {
        public let field: Field
        public let message: String
    }

    /// Checks filter values from outside (the API body, `herald jobs retry`) and makes the filter.
    ///
    /// - Parameters:
    ///   - app: the caller's app (already a valid `AppID`: the server key's, or `--app`).
    ///   - kind: 1-64 printable ASCII characters.
    ///   - deadSince, deadUntil: unix ms, not negative; a `deadUntil` at or before `deadSince` is an
    ///     empty window (matches nothing).
    ///   - provider: a provider id Herald knows (`PushProviderID`: apns, fcm, webpush, expo).
    ///   - reason: a dead letter's reason code (`DeadLetterCause.reason`): 1-128 bytes of printable
    ///     ASCII without `:`.
    /// - Throws: `Invalid` naming the first bad field.
    public static func validated(app: AppID = .default, kind: String? = nil, deadSince: Int64? = nil, deadUntil: Int64? = nil, provider: String? = nil,
                                 reason: String? = nil) throws(Invalid) -> DeadJobFilter {
        if let kind, !(1...64).contains(kind.utf8.count) || !kind.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) {
            throw Invalid(field: .kind, message: "kind is 1-64 printable ASCII characters, e.g. push.deliver")
        }
        if let deadSince, deadSince < 0 {
            throw Invalid(field: .deadSince, message: "dead_since is unix milliseconds, not negative")
        }
        if let deadUntil {
            // An end at or before the start is a well-formed window that holds no time: it matches
            // nothing (what SQL's range gives), as an OpenAPI schema cannot forbid it.
            guard deadUntil >= 0 else { throw Invalid(field: .deadUntil, message: "dead_until is unix milliseconds, not negative") }
        }
        if let provider, PushProviderID(rawValue: provider) == nil {
            let known = PushProviderID.allCases.map(\.rawValue).joined(separator: ", ")
            throw Invalid(field: .provider, message: "provider must be one of \(known)")
        }
        if let reason {
            let printable = reason.utf8.allSatisfy { (0x20...0x7e).contains($0) && $0 != UInt8(ascii: ":") }
            guard (1...128).contains(reason.utf8.count), printable else {
                throw Invalid(field: .reason, message: "reason is a dead letter's reason code (1-128 printable ASCII bytes before any ':'), e.g. ServiceUnavailable")
            }
        }
        return DeadJobFilter(app: app, kind: kind, deadSince: deadSince, deadUntil: deadUntil, provider: provider, reason: reason)
    }
}
