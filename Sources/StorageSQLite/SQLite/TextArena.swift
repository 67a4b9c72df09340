/// The bytes of the text parameters of one statement execution, so SQLite can bind them with
/// `SQLITE_STATIC` instead of copying each one (`SQLITE_TRANSIENT`: a `malloc` per text at the
/// bind and a `free` at the next clear; Debian's SQLite has no lookaside memory to take them
/// from). About 30 texts per notification at the choke point (issue 17).
///
/// Copies live in chunks of `chunkBytes` that are kept and reused: a copy stays valid until the
/// next `reset()`, which `Statement`'s one-call executions make at their start, after clearing
/// the bindings of the execution before (`Statement.run`, `query`, `queryOne`). A text longer
/// than a chunk is not copied here (`copy` answers nil; SQLite copies it as before).
///
/// Not Sendable: it belongs to one `SQLiteConnection` and is used on that connection's thread.
final class TextArena {
    /// Bytes per chunk: the texts of one execution (a notification row's ~400 bytes, a push job's
    /// ~1.5 KB payload) fit in one.
    static let chunkBytes = 4096

    // Unchecked: the arena is one connection's, used on its thread only (not Sendable), and a
    // copy per bound text paid the dynamic exclusivity checks of these class properties.
    @exclusivity(unchecked) private var chunks: [UnsafeMutablePointer<UInt8>] = []
    /// The chunk the next copy goes to (`chunks[current]`; nil before the first copy), and its
    /// bytes taken.
    @exclusivity(unchecked) private var chunk: UnsafeMutablePointer<UInt8>?
    @exclusivity(unchecked) private var current = 0, used = 0

    init() {}

    deinit {
        for chunk in chunks { chunk.deallocate() }
    }

    /// Forgets every copy: the memory is reused by the next execution's.
    func reset() {
        current = 0
        used = 0
        chunk = chunks.first
    }

    /// A copy of `bytes`, valid until the next `reset()`; nil for an empty or a longer text than
    /// a chunk. Copies never move: a full chunk is left for the next, never grown.
    func copy(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafePointer<UInt8>? {
        let count = bytes.count
        guard count <= Self.chunkBytes, let source = bytes.baseAddress, count > 0 else { return nil }
        if let chunk, used + count <= Self.chunkBytes {
            let destination = chunk + used
            destination.update(from: source, count: count)
            used += count
            return UnsafePointer(destination)
        }
        // The first copy, or this chunk is full: the next one, allocated the first time it is needed.
        if chunk != nil { current += 1 }
        if current == chunks.count { chunks.append(.allocate(capacity: Self.chunkBytes)) }
        let next = chunks[current]
        chunk = next
        next.update(from: source, count: count)
        used = count
        return UnsafePointer(next)
    }
}

@available(*, unavailable, message: "a TextArena belongs to its connection's thread")
extension TextArena: Sendable {}
