import Synchronization

/// Writes that may take a device out of its user's pushes, counted in this process by the
/// storage adapter that serialises its writes (SQLite's repositories, inside the write): a device
/// deleted (by its user, as invalid, purged, or replaced by a registration), a token moved to
/// another user (DV-1), a session ended or its expiry set (or brought forward by a token's
/// `session_exp`), a push preference saved (the user's switch). A session passing its expiry by
/// the clock is no write: the worker compares the expiry its insert read (`DeviceRecord.sessionExpiresAt`).
///
/// A job leased at insert that waits in the worker's backlog for a send slot carries the count
/// its inserting unit saw. When the count is unchanged by its send, and the storage runs its
/// writes one after another (`Storage.serializesWrites`: every such write came before the
/// insert's read of the device, or counts after it), the device the insert read is still the
/// one to push, and the worker sends without reading it again; otherwise it reads the device
/// and the user's switch again, as a claim does (breaker11: a backlog that waited seconds
/// pushed to devices their users had deleted). A counter, not a lock: the common path is one
/// atomic load a push instead of a read transaction (~25k instructions a push in `push.py`).
/// The native HTTP/2 client compares it too before it gives a waiting request a stream
/// (`SendByDeadline.audience`), so a claimed push that waited there is read again as well.
public enum PushAudienceChange {
    /// The writes counted so far in this process.
    public static let generation = Atomic<UInt64>(0)

    /// `generation` now.
    public static var current: UInt64 { generation.load(ordering: .acquiring) }

    /// Counts one write that may take devices out of pushes; call it inside the write's unit.
    public static func count() {
        generation.add(1, ordering: .sequentiallyConsistent)
    }
}
