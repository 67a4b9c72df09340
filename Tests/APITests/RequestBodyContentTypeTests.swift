@testable import API
import Realtime
import Testing

/// The Content-Type rule of JSON bodies, with the exact `application/json` taking the short way
/// (issue 17): every spelling answers as before.
@Suite struct RequestBodyContentTypeTests {
    func check(_ contentType: String?) -> Int? {
        let headers: HTTPHeaders = contentType.map { ["Content-Type": $0] } ?? [:]
        do {
            try RequestBody.check(HTTPRequest(method: .post, target: "/", headers: headers, body: Array("{}".utf8)))
            return nil
        } catch {
            return error.status
        }
    }

    @Test func jsonSpellingsPassAndOthersAre415() {
        for accepted in [nil, "application/json", "application/json; charset=utf-8", " Application/JSON ", "application/problem+json"] {
            #expect(check(accepted) == nil, "\(accepted ?? "none")")
        }
        for refused in ["text/plain", "application/jsonx", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""] {
            #expect(check(refused) == 415, "\(refused)")
        }
    }
}
