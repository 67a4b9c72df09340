import Synchronization

/// Writes that may take a device out of its user's pushes, counted by the storage adapter that
/// serialises its writes (SQLite's repositories, inside the write, on their storage's one
/// instance: `Storage.pushAudience`): a device deleted (by its user, as invalid, purged, or
/// replaced by a registration), a token moved to another user (DV-1), a session ended or its
/// expiry set (or brought forward by a token's `session_exp`), a push preference saved (the
/// user's switch). A session passing its expiry by the clock is no write: the worker compares
/// the expiry its insert read (`DeviceRecord.sessionExpiresAt`).
///
/// A job leased at insert that waits in the worker's backlog for a send slot carries the count
/// its inserting unit saw. When the count is unchanged by its send (every such write came
/// before the insert's read of the device, or counts after it: the storage runs its writes one
/// after another), the device the insert read is still the one to push, and the worker sends
/// without reading it again; otherwise it reads the device and the user's switch again, as a
/// claim does (breaker11: a backlog that waited seconds pushed to devices their users had
/// deleted). A storage without a counter (PostgreSQL: writes side by side) gives the other
/// answer always: read again. A counter, not a lock: the common path is one atomic load a push
/// instead of a read transaction (~25k instructions a push in `push.py`). The native HTTP/2
/// client compares it too before it gives a waiting request a stream (`SendByDeadline.audience`,
/// a `Mark`), so a claimed push that waited there is read again as well.
///
/// One per storage, not one per process (audience14): a process-wide count moved with every
/// storage's writes, so one storage's writes (another test suite's, run in parallel) changed
/// another's worker's decisions.
///
/// # Thread safety
/// Sendable: counted on the storage's writer, read on any thread.
public final class PushAudienceChange: Sendable {
    private let generation = Atomic<UInt64>(0)

    /// A counter at zero, for one storage.
    public init() {}

    /// The writes counted so far.
    public var current: UInt64 { generation.load(ordering: .acquiring) }

    /// Counts one write that may take devices out of pushes; call it inside the write's unit.
    public func count() {
        generation.add(1, ordering: .sequentiallyConsistent)
    }

    /// The count now, with this counter to compare it with later (`Mark.isCurrent`).
    public func mark() -> Mark { Mark(counter: self, count: current) }

    /// A count read earlier from this counter (`current`), to compare later.
    public func mark(at count: UInt64) -> Mark { Mark(counter: self, count: count) }

    /// A count of one counter, read when a push's device was read: what a transport compares
    /// before it puts the push on the wire (`SendByDeadline.audience`).
    public struct Mark: Sendable, Hashable {
        /// The counter the count was read from.
        public let counter: PushAudienceChange
        /// Its count then.
        public let count: UInt64

        /// Whether no write was counted since: the device read with it is still the one to push.
        public var isCurrent: Bool { counter.current == count }

        public static func == (a: Mark, b: Mark) -> Bool { a.counter === b.counter && a.count == b.count }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(ObjectIdentifier(counter))
            hasher.combine(count)
        }
    }
}
