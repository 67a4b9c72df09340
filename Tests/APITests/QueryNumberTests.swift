import Testing
@testable import API
import Realtime

/// edges14: a page's `limit`, a `cursor` and the demo's `since` are ASCII digits within their
/// range; `Int` alone read `%2B5` (`+5`) and `-0` as numbers.
@Suite struct QueryNumberTests {
    private func limit(_ query: String) throws(HTTPError) -> Int? {
        try HTTPRequest(target: "/v1/jobs?" + query).queryNumber("limit", in: 1...500, otherwise: "limit must be 1-500")
    }

    @Test(arguments: ["limit=%2B5", "limit=+5", "limit=%205", "limit=5%20", "limit=-0", "limit=-5", "limit=5.0", "limit=0x5",
                      "limit=", "limit", "limit=0", "limit=501", "limit=99999999999999999999", "limit=%EF%BC%95", "limit=5&limit=5"])
    func anythingButDigitsInRangeIsRefusedNamingIt(_ query: String) {
        do {
            let read = try limit(query)
            Issue.record("\(query) was read as \(String(describing: read))")
        } catch {
            #expect(error.status == 400 && error.code == "invalid_request" && error.extra["field"] == "limit", "\(error)")
        }
    }

    @Test func digitsInRangeAreRead() throws {
        #expect(try limit("limit=5") == 5)
        #expect(try limit("limit=05") == 5)
        #expect(try limit("limit=1") == 1)
        #expect(try limit("limit=500") == 500)
        #expect(try limit("other=+5") == nil)
        let cursor = try HTTPRequest(target: "/v1/jobs?cursor=9223372036854775807")
            .queryNumber("cursor", in: 1...Int64.max, otherwise: "cursor is the next_cursor of a previous page")
        #expect(cursor == Int64.max)
    }
}
