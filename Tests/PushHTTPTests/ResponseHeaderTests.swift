import Testing

@testable import PushHTTP

/// `PushHTTPResponse.header(_:)`, read on every push's answer (the APNs `apns-id`): names match
/// without ASCII case, values lose their optional whitespace, as `lowercased()` and a trim did.
@Suite struct ResponseHeaderTests {
    private let response = PushHTTPResponse(status: 200, headers: [
        ("apns-id", "EABEAE54-14A8-11E5-B60B-1697F925EC7B"),
        ("Retry-After", " \t120 "),
        ("x-a@", "at"),
        ("x-café", "utf8"),
        ("x-empty", ""),
        ("x-spaces", "  "),
    ], body: [])

    @Test func namesMatchInAnyASCIICase() {
        #expect(response.header("apns-id") == "EABEAE54-14A8-11E5-B60B-1697F925EC7B")
        #expect(response.header("APNS-ID") == "EABEAE54-14A8-11E5-B60B-1697F925EC7B")
        #expect(response.header("retry-after") == "120")
        #expect(response.header("x-café") == "utf8")
        #expect(response.header("x-empty") == "")
        #expect(response.header("x-spaces") == "")
    }

    @Test func onlyLettersIgnoreCase() {
        // '@' (0x40) and '`' (0x60) differ only in the case bit but are not letters.
        #expect(response.header("x-a`") == nil)
        #expect(response.header("x-A@") == "at")
        #expect(response.header("apns-i") == nil)
        #expect(response.header("apns-idx") == nil)
        #expect(response.header("") == nil)
    }

    @Test func trimmingKeepsInnerSpacesAndValuesWithoutAny() {
        #expect(" a b\t".trimmingSpaces() == "a b")
        #expect("a b".trimmingSpaces() == "a b")
        #expect("\ta".trimmingSpaces() == "a")
        #expect("a ".trimmingSpaces() == "a")
        #expect("".trimmingSpaces() == "")
        #expect(" ".trimmingSpaces() == "")
    }
}
