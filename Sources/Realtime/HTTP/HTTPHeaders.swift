/// An ordered list of HTTP header fields (RFC 9110 §5).
///
/// Order and duplicates are preserved and names keep the spelling they were
/// received with, because some fields (e.g. `Set-Cookie`) cannot be merged and
/// field order can matter to a proxy. Lookups compare names ASCII
/// case-insensitively, as field names are case-insensitive (RFC 9110 §5.1).
/// Lookups are linear scans: typical requests carry a dozen fields, where a
/// scan beats hashing and keeps the type a plain value.
public struct HTTPHeaders: Sendable, Sequence, Equatable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public typealias Element = (name: String, value: String)

    @usableFromInline
    var storage: [Element]

    /// An empty header list.
    public init() {
        storage = []
    }

    /// Headers in the given order; names and values are stored verbatim.
    public init(_ pairs: [(String, String)]) {
        storage = pairs.map { (name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Makes room for `count` fields in all, so that adding them does not grow the list step by step.
    public mutating func reserveCapacity(_ count: Int) {
        storage.reserveCapacity(count)
    }

    /// Appends a field, keeping any existing fields with the same name.
    public mutating func add(name: String, value: String) {
        storage.append((name: name, value: value))
    }

    /// Replaces the value of the first field named `name` (keeping its
    /// position and spelling) and removes later duplicates; appends if absent.
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = storage.firstIndex(where: { HTTPHeaders.namesEqual($0.name, name) }) else {
            storage.append((name: name, value: value))
            return
        }
        storage[first].value = value
        var index = storage.index(after: first)
        while index < storage.endIndex {
            if HTTPHeaders.namesEqual(storage[index].name, name) {
                storage.remove(at: index)
            } else {
                index += 1
            }
        }
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        storage.removeAll { HTTPHeaders.namesEqual($0.name, name) }
    }

    /// The value of the first field named `name`, or nil.
    public subscript(name: String) -> String? {
        for field in storage where HTTPHeaders.namesEqual(field.name, name) {
            return field.value
        }
        return nil
    }

    /// Values of all fields named `name`, in received order. Values are not
    /// split on commas: whether a field is a list is field-specific.
    public func values(_ name: String) -> [String] {
        storage.compactMap { HTTPHeaders.namesEqual($0.name, name) ? $0.value : nil }
    }

    /// The value of the first field named `name` (nil for none) and how many fields have that
    /// name, without making the list `values` makes.
    public func first(_ name: String) -> (value: String?, count: Int) {
        var value: String?
        var count = 0
        for field in storage where HTTPHeaders.namesEqual(field.name, name) {
            if count == 0 { value = field.value }
            count += 1
        }
        return (value, count)
    }

    /// Whether any field is named `name`.
    public func contains(_ name: String) -> Bool {
        storage.contains { HTTPHeaders.namesEqual($0.name, name) }
    }

    /// Number of fields, counting duplicates.
    public var count: Int { storage.count }

    public var isEmpty: Bool { storage.isEmpty }

    public func makeIterator() -> IndexingIterator<[Element]> {
        storage.makeIterator()
    }

    /// Exact comparison: same names (same spelling), values and order.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.storage.count == rhs.storage.count else { return false }
        for (l, r) in zip(lhs.storage, rhs.storage) where l.name != r.name || l.value != r.value {
            return false
        }
        return true
    }

    public var description: String {
        "[" + storage.map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }

    /// ASCII case-insensitive equality without allocating. Non-ASCII bytes must
    /// match exactly; field names are tokens, so that case never matches a
    /// real name anyway.
    /// Over the two names' contiguous bytes: `zip` of their UTF-8 views went through the
    /// generic iterators, 2 % of the choke point's instructions for a handful of lookups a request
    /// (issue 17).
    static func namesEqual(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for index in 0..<x.count where x[index] != y[index] && HTTPBytes.lowercased(x[index]) != HTTPBytes.lowercased(y[index]) {
                    return false
                }
                return true
            }
        }
    }

    /// Whether the comma-separated list in any `name` field contains `token`
    /// (case-insensitive), e.g. `Connection: keep-alive, Upgrade`.
    func listContains(_ name: String, token: String) -> Bool {
        !allListElements(name) { !HTTPHeaders.namesEqual($0, token) }
    }

    /// Whether every element of the `name` fields' lists is `token` (case-insensitive), e.g.
    /// `Expect: 100-continue`; true when there is none.
    func listHasOnly(_ name: String, token: String) -> Bool {
        allListElements(name) { HTTPHeaders.namesEqual($0, token) }
    }

    /// Whether `test` holds for every non-empty element (whitespace trimmed) of the
    /// comma-separated lists in the `name` fields, in order; stops at the first that fails.
    private func allListElements(_ name: String, _ test: (String) -> Bool) -> Bool {
        for field in storage where HTTPHeaders.namesEqual(field.name, name) {
            for element in field.value.utf8.split(separator: HTTPBytes.comma) {
                let trimmed = HTTPBytes.trimOWS(element)
                // RFC 9110 §5.6.1: empty list elements do not count.
                if !trimmed.isEmpty, !test(String(decoding: trimmed, as: UTF8.self)) { return false }
            }
        }
        return true
    }
}
