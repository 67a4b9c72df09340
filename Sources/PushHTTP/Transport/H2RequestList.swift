// The driver's two ordered lists of requests (stream timeouts, send-by deadlines): one type over
// the links each request keeps for each list.

/// A request's place in one of the driver's lists: a doubly linked list through the requests, so
/// a finished one leaves in O(1), and one stream that hangs does not keep every request after it
/// alive (`prev` is unowned: the list holds each request once, through its predecessor's `next`).
struct H2Link {
    var next: H2Request?
    unowned(unsafe) var prev: H2Request?
    var linked = false
}

/// Requests in ascending order of one of their deadlines, to within `slack`, linked through that
/// list's `H2Link` in each request. Deadlines mostly come in order, so an insert searches from the
/// tail. Driver thread only.
///
/// The slack: a push's send-by deadline reaches the client as whole milliseconds left on the wall
/// clock (`PushHTTPRequest.sendWithinMilliseconds`), placed on the driver's monotonic clock when
/// handed over, so pushes of one deadline arrive with keys in a sawtooth under 1 ms deep (each
/// tick of the wall clock's millisecond moves the key back by up to 1 ms). Placed exactly, each
/// insert after a tick walked back over every request of the last millisecond (~2.7k
/// instructions a push at 20k pushes/s). A request is instead put after the last one whose key is
/// at most `slack` later than its own: the list is in order to within 1 ms, so a deadline passes
/// unnoticed behind the head for at most 1 ms more (the sweep stops at the first key not passed).
struct H2RequestList {
    /// How far a key may be out of order, ns.
    static let slack: UInt64 = 1_000_000

    /// Which deadline orders the list, and so which of a request's links it uses.
    enum Order {
        /// `H2Request.deadline` (`timeoutLink`): requests holding a stream.
        case deadline
        /// `H2Request.sendBy` (`sendByLink`): requests waiting for a stream.
        case sendBy
    }

    let order: Order
    /// The request with the earliest deadline, or nil when the list is empty.
    private(set) var head: H2Request?
    private unowned(unsafe) var tail: H2Request?

    init(order: Order) { self.order = order }

    /// Puts `r` in the list by its deadline: after the last request whose deadline is at most
    /// `slack` later (so after every one with the same deadline). `r` must not be in the list already.
    mutating func insert(_ r: H2Request) {
        let (sum, overflow) = r.key(order).addingReportingOverflow(Self.slack)
        let key = overflow ? UInt64.max : sum
        var before = tail
        while let b = before, b.key(order) > key { before = b[link: order].prev }
        var link = H2Link(next: nil, prev: before, linked: true)
        if let before {
            link.next = before[link: order].next
            before[link: order].next = r
        } else {
            link.next = head
            head = r
        }
        if let next = link.next { next[link: order].prev = r } else { tail = r }
        r[link: order] = link
    }

    /// Takes `r` out of the list; nothing when it is not in it.
    mutating func remove(_ r: H2Request) {
        let link = r[link: order]
        guard link.linked else { return }
        if let prev = link.prev { prev[link: order].next = link.next } else { head = link.next }
        if let next = link.next { next[link: order].prev = link.prev } else { tail = link.prev }
        r[link: order] = H2Link()
    }

    /// Whether `r` is in the list.
    func contains(_ r: H2Request) -> Bool { r[link: order].linked }
}

extension H2Request {
    /// The request's links in the list of `order`.
    subscript(link order: H2RequestList.Order) -> H2Link {
        get {
            switch order {
            case .deadline: timeoutLink
            case .sendBy: sendByLink
            }
        }
        set {
            switch order {
            case .deadline: timeoutLink = newValue
            case .sendBy: sendByLink = newValue
            }
        }
    }

    /// The deadline that orders the list of `order`, on the driver's clock (ns).
    func key(_ order: H2RequestList.Order) -> UInt64 {
        switch order {
        case .deadline: deadline
        case .sendBy: sendBy
        }
    }
}
