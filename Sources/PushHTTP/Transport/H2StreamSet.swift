// The requests holding streams on one connection: an intrusive list through the requests, in the
// order they got their streams (ascending stream ids), instead of a dictionary keyed by stream id
// (issue 17: its insert, find and delete cost ~0.4k instructions a push; nghttp2's own map finds a
// stream's request, `H2Connection.request(onStream:)`).

/// A connection's requests on the wire. Holds each request strongly through its predecessor's
/// `streamLink.next` (the first through `head`). Driver thread only.
struct H2StreamSet {
    private(set) var head: H2Request?
    private unowned(unsafe) var tail: H2Request?
    /// How many requests hold a stream on the connection.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Adds `r` (not in any connection's set) at the end.
    mutating func append(_ r: H2Request) {
        r.streamLink = H2Link(next: nil, prev: tail, linked: true)
        if let tail { tail.streamLink.next = r } else { head = r }
        tail = r
        count += 1
    }

    /// Takes `r` out; nothing when it is not in the set.
    mutating func remove(_ r: H2Request) {
        let link = r.streamLink
        guard link.linked else { return }
        if let prev = link.prev { prev.streamLink.next = link.next } else { head = link.next }
        if let next = link.next { next.streamLink.prev = link.prev } else { tail = link.prev }
        r.streamLink = H2Link()
        count -= 1
    }

    /// Empties the set; returns its requests in the order they got their streams.
    mutating func removeAll() -> [H2Request] {
        var all: [H2Request] = []
        all.reserveCapacity(count)
        while let r = head {
            head = r.streamLink.next
            r.streamLink = H2Link()
            all.append(r)
        }
        tail = nil
        count = 0
        return all
    }
}
