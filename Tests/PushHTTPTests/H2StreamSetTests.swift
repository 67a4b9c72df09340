import Testing

@testable import PushHTTP

/// A connection's requests on the wire (`H2StreamSet`): order kept through removals, each request
/// in it once, and emptied in the order the streams were opened (`fail` retries them oldest first).
@Suite struct H2StreamSetTests {
    static func request() -> H2Request {
        H2Request(request: PushHTTPRequest(url: "https://example.test/", headers: [], body: []), userAgent: [], completion: .typed { _ in })
    }

    @Test func removalsKeepTheOrderAndTheCount() {
        var set = H2StreamSet()
        let requests = (0..<5).map { _ in Self.request() }
        for r in requests { set.append(r) }
        #expect(set.count == 5)
        set.remove(requests[0])   // the head
        set.remove(requests[2])   // the middle
        set.remove(requests[4])   // the tail
        set.remove(requests[2])   // not in it any more: nothing
        #expect(set.count == 2)
        set.append(requests[4])
        let all = set.removeAll()
        #expect(all.map { ObjectIdentifier($0) } == [requests[1], requests[3], requests[4]].map { ObjectIdentifier($0) })
        #expect(set.isEmpty && set.head == nil)
        #expect(requests.allSatisfy { !$0.streamLink.linked }, "every request can join a set again")
    }

    /// The providers' usual answer header names come back as the same text as decoding them.
    @Test func answerHeaderNamesAreTheirText() {
        for name in ["apns-id", "retry-after", "content-type", "apns-unique-id", "content-length", "x-other", "apns-idx"] {
            let bytes = Array(name.utf8)
            #expect(bytes.withUnsafeBufferPointer { H2Driver.headerName($0) } == name)
        }
    }
}
