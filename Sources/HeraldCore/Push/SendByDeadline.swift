/// When a push must be on the wire, and answered, so that its job's outcome is recorded while
/// the job is still leased: the lease's end less a margin (`SendByDeadline(leaseUntil:leaseMilliseconds:)`).
///
/// Leases are not renewed. Without this, a provider that stalls longer than the lease kept a push
/// waiting for an HTTP/2 stream, or in flight, past its lease; another claim took the job and sent
/// it again while the first send later completed (issue 17: 128 of 2,000 pushes sent twice with a
/// 10 s lease and a 30 s stall). With it, the transport drops a push still waiting at the deadline
/// (`PushClassification.sendByPassed`: retried later, the attempt not counted) and times out one
/// on the wire at the deadline, so the worker records either outcome before the lease ends.
public struct SendByDeadline: Sendable, Hashable, CustomStringConvertible {
    /// UNIX ms on the sender's clock (the worker's and the providers' `Clock`).
    public var unixMilliseconds: Int64
    /// The storage's `PushAudienceChange` count when the push's device was read (nil: no such
    /// condition). A transport that holds the push for an HTTP/2 stream puts it on one only while
    /// the count is unchanged (`Mark.isCurrent`), else gives it back unsent (`PushClassification.audienceChanged`), for the device
    /// to be read again: a device deleted while its push waited for a stream is not pushed to
    /// (ADR 0007's second amendment).
    public var audience: PushAudienceChange.Mark?

    public init(unixMilliseconds: Int64, audience: PushAudienceChange.Mark? = nil) {
        self.unixMilliseconds = unixMilliseconds
        self.audience = audience
    }

    /// The deadline of a job leased until `leaseUntil` (UNIX ms) for `leaseMilliseconds`: the
    /// lease's end less `margin(leaseMilliseconds:)`, the time the worker keeps to record the
    /// outcome.
    public init(leaseUntil: Int64, leaseMilliseconds: Int64, audience: PushAudienceChange.Mark? = nil) {
        self.unixMilliseconds = leaseUntil - Self.margin(leaseMilliseconds: leaseMilliseconds)
        self.audience = audience
    }

    /// The time kept before a lease's end to record a push's outcome, ms: a fifth of the lease,
    /// at least 1 s and at most 10 s, and never more than half the lease (60 s → 10 s; 10 s →
    /// 2 s; the shortest lease, 2 s → 1 s).
    public static func margin(leaseMilliseconds lease: Int64) -> Int64 {
        min(max(lease / 5, 1_000), 10_000, max(lease / 2, 0))
    }

    /// Milliseconds left at `now` (UNIX ms); zero or less once it has passed.
    public func millisecondsLeft(atMilliseconds now: Int64) -> Int64 {
        unixMilliseconds - now
    }

    /// Whether the deadline has passed at `now` (UNIX ms): nothing more may be sent.
    public func hasPassed(atMilliseconds now: Int64) -> Bool {
        unixMilliseconds <= now
    }

    public var description: String { "send by \(unixMilliseconds)" }
}
