import HeraldCore
import Testing

@testable import PushHTTP

/// The driver's ordered request list (`H2RequestList`), used for both stream timeouts and send-by deadlines.
@Suite struct H2RequestListTests {
    static func request(deadline: UInt64 = 0, sendBy: UInt64 = .max) -> H2Request {
        let r = H2Request(request: PushHTTPRequest(url: "https://example.test/", headers: [], body: []), userAgent: [], completion: .typed { _ in })
        r.deadline = deadline
        r.sendBy = sendBy
        return r
    }

    /// The keys of the list from head to tail, by following `next`, and checks the `prev` links agree.
    static func keys(_ list: H2RequestList) -> [UInt64] {
        var keys: [UInt64] = []
        var previous: H2Request?
        var at = list.head
        while let r = at {
            #expect(r[link: list.order].prev === previous)
            keys.append(r.key(list.order))
            previous = r
            at = r[link: list.order].next
        }
        return keys
    }

    static let ms: UInt64 = 1_000_000

    @Test(arguments: [H2RequestList.Order.deadline, .sendBy])
    func keepsAscendingOrderWithTiesInInsertOrder(_ order: H2RequestList.Order) {
        var list = H2RequestList(order: order)
        let values: [UInt64] = [30, 10, 20, 20, 40, 5].map { $0 * Self.ms }
        let requests = values.map { order == .deadline ? Self.request(deadline: $0) : Self.request(sendBy: $0) }
        for r in requests { list.insert(r) }
        #expect(Self.keys(list) == [5, 10, 20, 20, 30, 40].map { $0 * Self.ms })
        #expect(list.head === requests[5])
        // Ties keep insert order: the first 20 before the second.
        #expect(requests[2][link: order].next === requests[3])
        #expect(requests.allSatisfy { list.contains($0) })
    }

    /// Keys less than `slack` apart keep their insert order: the sawtooth of one deadline's pushes
    /// (whole milliseconds on the wall clock, placed on the monotonic one) is not sorted exactly.
    @Test func keysWithinTheSlackKeepInsertOrder() {
        var list = H2RequestList(order: .sendBy)
        let values: [UInt64] = [10 * Self.ms + 900_000, 10 * Self.ms + 950_000, 10 * Self.ms + 10, 10 * Self.ms + 20,
                                9 * Self.ms, .max - 1]
        for v in values { list.insert(Self.request(sendBy: v)) }
        // 9 ms is more than the slack before every other key; .max - 1 does not overflow the search.
        #expect(Self.keys(list) == [9 * Self.ms, 10 * Self.ms + 900_000, 10 * Self.ms + 950_000, 10 * Self.ms + 10, 10 * Self.ms + 20,
                                    .max - 1])
    }

    @Test func removesHeadMiddleAndTailAndIgnoresOutsiders() {
        var list = H2RequestList(order: .deadline)
        let requests = (1...5).map { Self.request(deadline: UInt64($0) * 10 * Self.ms) }
        for r in requests { list.insert(r) }
        list.remove(requests[0])
        list.remove(requests[2])
        list.remove(requests[4])
        list.remove(requests[4])                       // no longer in it: nothing
        list.remove(Self.request(deadline: 30 * Self.ms))         // never in it: nothing
        #expect(Self.keys(list) == [20, 40].map { $0 * Self.ms })
        #expect(!list.contains(requests[0]) && requests[0][link: .deadline].next == nil)
        // The tail was moved: a later insert goes after the new tail.
        list.insert(requests[4])
        list.insert(requests[0])
        #expect(Self.keys(list) == [10, 20, 40, 50].map { $0 * Self.ms })
        for r in requests { list.remove(r) }
        #expect(list.head == nil)
    }

    @Test func theTwoListsOfOneRequestAreIndependent() {
        var timeouts = H2RequestList(order: .deadline)
        var sendBys = H2RequestList(order: .sendBy)
        let a = Self.request(deadline: 20 * Self.ms, sendBy: 90 * Self.ms), b = Self.request(deadline: 10 * Self.ms, sendBy: 80 * Self.ms)
        for r in [a, b] { timeouts.insert(r); sendBys.insert(r) }
        sendBys.remove(b)
        #expect(Self.keys(timeouts) == [10, 20].map { $0 * Self.ms })
        #expect(Self.keys(sendBys) == [90 * Self.ms])
        #expect(timeouts.contains(b) && !sendBys.contains(b))
    }
}
