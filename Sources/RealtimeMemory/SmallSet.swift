/// A set that holds zero or one element without allocating, and a `Set` beyond that.
///
/// Presence keeps several sets per connection (a session's connections, a user's sessions, a
/// channel's connections) and almost all of them hold exactly one element; as plain `Set`s they
/// were the largest part of an idle stream's memory (issue 8: ≤ 2 KiB per idle SSE stream).
public struct SmallSet<Element: Hashable & Sendable>: Sequence, Sendable, ExpressibleByArrayLiteral {
    private enum Storage: Sendable {
        case empty
        case one(Element)
        case many(Set<Element>)
    }

    private var storage = Storage.empty

    public init() {}

    public init(arrayLiteral elements: Element...) {
        for element in elements { insert(element) }
    }

    public init(_ elements: some Sequence<Element>) {
        for element in elements { insert(element) }
    }

    public var isEmpty: Bool {
        if case .empty = storage { return true }
        return false
    }

    public var count: Int {
        switch storage {
        case .empty: 0
        case .one: 1
        case .many(let set): set.count
        }
    }

    public func contains(_ element: Element) -> Bool {
        switch storage {
        case .empty: false
        case .one(let only): only == element
        case .many(let set): set.contains(element)
        }
    }

    /// - Returns: true when `element` was not there yet.
    @discardableResult
    public mutating func insert(_ element: Element) -> Bool {
        switch storage {
        case .empty:
            storage = .one(element)
            return true
        case .one(let only):
            guard only != element else { return false }
            storage = .many([only, element])
            return true
        case .many(var set):
            storage = .empty   // keep `set` uniquely referenced while it changes
            let inserted = set.insert(element).inserted
            storage = .many(set)
            return inserted
        }
    }

    public mutating func remove(_ element: Element) {
        switch storage {
        case .empty:
            break
        case .one(let only):
            if only == element { storage = .empty }
        case .many(var set):
            storage = .empty
            set.remove(element)
            if set.count == 1, let last = set.first {
                storage = .one(last)
            } else if !set.isEmpty {
                storage = .many(set)
            }
        }
    }

    public struct Iterator: IteratorProtocol {
        fileprivate var single: Element?
        fileprivate var rest: Set<Element>.Iterator?

        public mutating func next() -> Element? {
            if let element = single {
                single = nil
                return element
            }
            return rest?.next()
        }
    }

    public func makeIterator() -> Iterator {
        switch storage {
        case .empty: Iterator(single: nil, rest: nil)
        case .one(let only): Iterator(single: only, rest: nil)
        case .many(let set): Iterator(single: nil, rest: set.makeIterator())
        }
    }
}
