import CSQLite

/// A connection's idle prepared statements, keyed by SQL text.
///
/// Herald's SQL is a fixed set of string constants, so compiling each once per connection and
/// reusing it saves the parse and plan on every request. A statement is *checked out* while a
/// `Statement` object uses it and *checked in* (reset, bindings cleared) when that object goes
/// away, so two live `Statement`s never share one `sqlite3_stmt` — a nested query with the same
/// SQL simply compiles a second one, which is kept too while there is room.
///
/// Bounded by `capacity`: a statement compiled while the cache is full is finalized after use, not cached.
/// Owned by its connection, and like it used by one thread at a time.
final class StatementCache {
    /// One compiled statement the cache keeps, lent to one `Statement` at a time. The borrower
    /// holds the entry itself, so giving it back needs no lookup by SQL text (hashing the longest
    /// statements, the claim's 600 bytes, twice per use cost more than running small ones).
    final class Entry {
        let sql: String
        let handle: OpaquePointer
        /// Lent to a `Statement` now.
        fileprivate(set) var inUse = true
        /// Finalized by `finalizeAll` while lent: its borrower finalizes it on return.
        fileprivate(set) var dropped = false
        /// Result column names (and name → index map), made on first use: building them for
        /// every query cost ~24k instructions per device lookup.
        fileprivate var columns: RowColumns?
        /// Another statement of the same SQL (compiled for a nested use while this one was lent).
        fileprivate var next: Entry?
        /// Every parameter is NULL: the borrower's last use was a one-call execution, which
        /// clears its bindings when done, and nothing was bound since. Giving the statement back
        /// then needs no second clear (issue 17: ~1.5k instructions a notification).
        var bindingsCleared = false

        fileprivate init(sql: String, handle: OpaquePointer) {
            self.sql = sql
            self.handle = handle
        }
    }

    /// A statement's SQL text as the cache's key, hashed by its length and a few of its bytes
    /// (the first 32, 8 from the middle, the last 16) instead of all of them: Herald's texts run to
    /// hundreds of bytes and were hashed on every use, ~1.4k instructions per statement, a dozen
    /// statements per notification (issue 17). Equality still compares the whole text (at once
    /// when both are the same literal), so texts that hash alike only share a bucket.
    struct Key: Hashable {
        let sql: String

        func hash(into hasher: inout Hasher) {
            var sql = sql
            sql.withUTF8 { bytes in
                let count = bytes.count
                hasher.combine(count)
                guard count > 0, let base = bytes.baseAddress else { return }
                let raw = UnsafeRawPointer(base)
                // Whole 8-byte words where the text has them, else the bytes one by one.
                func word(at offset: Int) -> UInt64 {
                    guard offset >= 0, offset < count else { return 0 }
                    if offset + 8 <= count { return raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
                    var value: UInt64 = 0
                    for index in offset..<min(count, offset + 8) { value = value << 8 | UInt64(base[index]) }
                    return value
                }
                hasher.combine(word(at: 0))
                if count > 8 {
                    hasher.combine(word(at: 8))
                    hasher.combine(word(at: 16))
                    hasher.combine(word(at: 24))
                    hasher.combine(word(at: count / 2))
                    hasher.combine(word(at: count - 16))
                    hasher.combine(word(at: count - 8))
                }
            }
        }

        static func == (a: Key, b: Key) -> Bool { a.sql == b.sql }
    }

    let capacity: Int
    /// The statements kept, by SQL text; more than one per text when nested uses needed them.
    private var entries: [Key: Entry] = [:]
    private var kept = 0
    /// Compilations (`sqlite3_prepare_v3` calls) through the cache: tests read it to see reuse.
    private(set) var compiledCount = 0

    init(capacity: Int) {
        precondition(capacity >= 0, "statement cache capacity must not be negative")
        self.capacity = capacity
    }

    /// Number of idle cached statements.
    var count: Int {
        var idle = 0
        forEachEntry { if !$0.inUse { idle += 1 } }
        return idle
    }

    /// Lends an idle statement for `sql`, if any; the caller owns it until `checkIn`.
    func checkOut(_ sql: String) -> Entry? {
        let slot = Self.slot(of: sql)
        // The entry last lent for a text at this address: Herald's SQL is string literals, whose
        // bytes never move, so this finds most statements without hashing (issue 17). The text
        // is compared all the same (at once when it is the same literal): an address says nothing
        // for a text built at run time or kept inline.
        if let entry = recent[slot], !entry.inUse, entry.sql == sql {
            entry.inUse = true
            return entry
        }
        var candidate = entries[Key(sql: sql)]
        while let entry = candidate {
            if !entry.inUse {
                entry.inUse = true
                recent[slot] = entry
                return entry
            }
            candidate = entry.next
        }
        return nil
    }

    /// Entries by the address of their SQL's bytes (`slot(of:)`), the last one lent for each.
    /// (Unchecked: the cache is confined to its connection's thread, and a dynamic exclusivity
    /// check per lookup cost as much as the lookup.)
    @exclusivity(unchecked) private var recent = [Entry?](repeating: nil, count: StatementCache.recentSlots)
    private static let recentSlots = 64

    /// Where `sql` goes in `recent`: bits of the address of its UTF-8 bytes.
    private static func slot(of sql: String) -> Int {
        let address = sql.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? 0
        return Int(truncatingIfNeeded: (address >> 3 ^ address >> 9) & UInt(recentSlots - 1))
    }

    func noteCompiled() { compiledCount += 1 }

    /// Takes a statement just compiled for `sql` into the cache, lent to the caller, when there
    /// is room (a nested use of the same SQL compiles and keeps a second one).
    /// - Returns: nil when not kept: the caller finalizes it.
    func keep(_ sql: String, _ handle: OpaquePointer) -> Entry? {
        guard kept < capacity else { return nil }
        let entry = Entry(sql: sql, handle: handle)
        let key = Key(sql: sql)
        entry.next = entries[key]
        entries[key] = entry
        recent[Self.slot(of: sql)] = entry
        kept += 1
        return entry
    }

    /// Gives a lent statement back, reset with its bindings cleared.
    func checkIn(_ entry: Entry) {
        guard !entry.dropped else {
            sqlite3_finalize(entry.handle)
            return
        }
        // The reset's result repeats the last step's error, which was reported already.
        sqlite3_reset(entry.handle)
        if !entry.bindingsCleared { sqlite3_clear_bindings(entry.handle) }
        entry.bindingsCleared = false
        entry.inUse = false
    }

    /// The column names of the lent statement `entry`, made by `make` on first use. Checked
    /// against the statement's column count, which a schema change could alter (SQLite then
    /// prepares the statement again behind the same handle).
    func columns(of entry: Entry, make: () -> RowColumns) -> RowColumns {
        if let known = entry.columns, known.names.count == Int(sqlite3_column_count(entry.handle)) { return known }
        let made = make()
        entry.columns = made
        return made
    }

    /// Finalizes every idle statement; lent ones are finalized when they come back.
    func finalizeAll() {
        forEachEntry { entry in
            if entry.inUse {
                entry.dropped = true
            } else {
                sqlite3_finalize(entry.handle)
            }
        }
        entries.removeAll()
        recent = [Entry?](repeating: nil, count: Self.recentSlots)
        kept = 0
    }

    private func forEachEntry(_ body: (Entry) -> Void) {
        for first in entries.values {
            var entry: Entry? = first
            while let current = entry {
                body(current)
                entry = current.next
            }
        }
    }
}
