import Synchronization

/// Remembers the value made for the last key: pushes come in runs of one notification to many
/// devices, so a request body built for the first device of a run serves the rest of it (issue
/// 17: bodies built once per notification, not once per push). One slot, so it holds no more
/// than one body whatever the traffic.
///
/// # Thread safety
/// A `Mutex` guards the slot; `make` runs outside it (two threads missing at once both make the
/// value; the later one stays).
///
/// Inlinable, so the adapters (other modules) get it specialized to their key: unspecialized, the
/// generic look-up cost ~3k instructions a push in metadata and value-witness calls alone.
package final class LastValueCache<Key: Equatable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline let slot = Mutex<(key: Key, value: Value)?>(nil)

    @inlinable package init() {}

    /// The value for `key`: the remembered one when the last key was equal, else `make()`'s,
    /// which is then remembered. - Throws: `make`'s error (nothing is remembered then).
    @inlinable
    package func value<E: Error>(for key: Key, make: () throws(E) -> Value) throws(E) -> Value {
        let hit = slot.withLock { slot -> Value? in
            guard let slot, slot.key == key else { return nil }
            return slot.value
        }
        if let hit { return hit }
        let value = try make()
        slot.withLock { $0 = (key, value) }
        return value
    }
}
