import Foundation
import HeraldCore
import Testing

@testable import API
@testable import Realtime

/// How `Authenticator` reads a client's access token from a request: one way at most
/// (RFC 6750 §2), the header's scheme checked, the query's parameter once.
@Suite("Authenticator")
struct AuthenticatorTests {
    static func context(_ target: String, _ headers: [(String, String)] = []) -> RequestContext {
        RequestContext(request: HTTPRequest(method: .get, target: target, headers: HTTPHeaders(headers), body: []),
                       pathParameters: [:], remoteAddress: "127.0.0.1", loopIndex: 0)
    }

    static let carol = AppRoutingTests.token(AppRoutingTests.claims(), hs256: AppRoutingTests.defaultSecret)
    static let mallory = AppRoutingTests.token(AppRoutingTests.claims(["sub": "mallory"]), hs256: AppRoutingTests.defaultSecret)

    @Test func eitherWayAloneIsRead() throws {
        let auth = try AppRoutingTests.directory([])
        #expect(try auth.client(Self.context("/v1/stream", [("Authorization", "Bearer \(Self.carol)")]), now: AppRoutingTests.now).subject == "carol")
        #expect(try auth.client(Self.context("/v1/stream?access_token=\(Self.mallory)"), now: AppRoutingTests.now).subject == "mallory")
    }

    /// The breaker's case: the header names one user, the query another, and the query was ignored.
    /// Refused whether the two differ or not, and whatever the header's scheme.
    @Test(arguments: [("Bearer \(carol)", mallory), ("Bearer \(carol)", carol), ("Basic Y2Fyb2w6eA==", carol), ("Bearer", "")])
    func bothWaysAreA400NamingTheQueryParameter(header: String, query: String) throws {
        let auth = try AppRoutingTests.directory([])
        let context = Self.context("/v1/stream?access_token=\(query)", [("Authorization", header)])
        #expect(throws: HTTPError(400, "invalid_request",
                                  "the access token is sent both in Authorization and as ?access_token=; send it one way (RFC 6750 §2)",
                                  field: "access_token")) {
            try auth.client(context, now: AppRoutingTests.now)
        }
    }

    @Test func eachWayGivenTwiceIsStillRefusedByName() throws {
        let auth = try AppRoutingTests.directory([])
        let twoHeaders = Self.context("/", [("Authorization", "Bearer \(Self.carol)"), ("Authorization", "Bearer \(Self.carol)")])
        do {
            _ = try auth.client(twoHeaders, now: AppRoutingTests.now)
            Issue.record("Authorization given twice was read")
        } catch {
            #expect(error.status == 400 && error.extra["field"] == "Authorization")
        }
        do {
            _ = try auth.client(Self.context("/?access_token=\(Self.carol)&access_token=\(Self.carol)"), now: AppRoutingTests.now)
            Issue.record("a repeated access_token was read")
        } catch {
            #expect(error.status == 400 && error.extra["field"] == "access_token")
        }
    }
}
