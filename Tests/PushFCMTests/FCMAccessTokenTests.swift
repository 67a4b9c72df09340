import Dispatch
import HeraldCore
import PushHTTP
import PushTestSupport
import Synchronization
import Testing

@testable import PushFCM

@Suite struct FCMAccessTokenStateMachineTests {
    typealias Machine = FCMAccessTokenStateMachine<String>

    @Test func firstRequestFetchesAndOthersWait() {
        var machine = Machine()
        guard case .waitAndFetch(let generation) = machine.request(now: 0, waiter: "a") else { Issue.record("no fetch"); return }
        guard case .wait = machine.request(now: 1, waiter: "b") else { Issue.record("second fetch"); return }
        let (waiters, result) = machine.fetchFinished(generation: generation, result: .success(.init(accessToken: "t1", expiresIn: 3600)), now: 2)
        #expect(waiters == ["a", "b"])
        #expect(result == .success("t1"))
        guard case .use("t1") = machine.request(now: 3, waiter: "c") else { Issue.record("not cached"); return }
    }

    @Test func refreshFiveMinutesBeforeExpiryWithoutMakingCallersWait() {
        var machine = Machine()
        guard case .waitAndFetch(let g1) = machine.request(now: 0, waiter: "a") else { return #expect(Bool(false)) }
        _ = machine.fetchFinished(generation: g1, result: .success(.init(accessToken: "t1", expiresIn: 3600)), now: 0)
        guard case .use("t1") = machine.request(now: 3299, waiter: "b") else { return #expect(Bool(false)) }
        guard case .useAndFetch("t1", let g2) = machine.request(now: 3300, waiter: "c") else { return #expect(Bool(false)) }
        guard case .use("t1") = machine.request(now: 3301, waiter: "d") else { return #expect(Bool(false)) }  // one fetch only
        _ = machine.fetchFinished(generation: g2, result: .success(.init(accessToken: "t2", expiresIn: 3600)), now: 3302)
        guard case .use("t2") = machine.request(now: 3303, waiter: "e") else { return #expect(Bool(false)) }
    }

    @Test func tokenTooCloseToExpiryMakesCallersWait() {
        var machine = Machine()
        guard case .waitAndFetch(let g1) = machine.request(now: 0, waiter: "a") else { return #expect(Bool(false)) }
        _ = machine.fetchFinished(generation: g1, result: .success(.init(accessToken: "t1", expiresIn: 3600)), now: 0)
        guard case .waitAndFetch = machine.request(now: 3540, waiter: "b") else { return #expect(Bool(false)) }  // within 60 s of expiry
    }

    @Test func failureAnswersWaitersThenCoolsDown() {
        var machine = Machine()
        guard case .waitAndFetch(let g1) = machine.request(now: 0, waiter: "a") else { return #expect(Bool(false)) }
        let error = FCMTokenError.unavailable(status: 503, detail: "down")
        let (waiters, result) = machine.fetchFinished(generation: g1, result: .failure(error), now: 1)
        #expect(waiters == ["a"])
        #expect(result == .failure(error))
        guard case .fail(error) = machine.request(now: 10, waiter: "b") else { return #expect(Bool(false)) }
        guard case .waitAndFetch = machine.request(now: 11, waiter: "c") else { return #expect(Bool(false)) }
    }

    @Test func staleOrRepeatedAnswersAreIgnored() {
        var machine = Machine()
        guard case .waitAndFetch(let g1) = machine.request(now: 0, waiter: "a") else { return #expect(Bool(false)) }
        let first = machine.fetchFinished(generation: g1, result: .success(.init(accessToken: "t1", expiresIn: 3600)), now: 0)
        #expect(first.waiters == ["a"])
        let again = machine.fetchFinished(generation: g1, result: .success(.init(accessToken: "evil", expiresIn: 3600)), now: 0)
        #expect(again.waiters.isEmpty)
        #expect(machine.token?.value == "t1")
    }

    @Test func invalidateDropsOnlyTheCurrentToken() {
        var machine = Machine()
        guard case .waitAndFetch(let g1) = machine.request(now: 0, waiter: "a") else { return #expect(Bool(false)) }
        _ = machine.fetchFinished(generation: g1, result: .success(.init(accessToken: "t1", expiresIn: 3600)), now: 0)
        #expect(machine.invalidate(rejected: "t0") == false)
        #expect(machine.invalidate(rejected: "t1") == true)
        #expect(machine.invalidate(rejected: "t1") == false)
        guard case .waitAndFetch = machine.request(now: 1, waiter: "b") else { return #expect(Bool(false)) }
    }

    @Test func shortLivedTokensStillWork() {
        var machine = Machine()
        guard case .waitAndFetch(let g1) = machine.request(now: 0, waiter: "a") else { return #expect(Bool(false)) }
        _ = machine.fetchFinished(generation: g1, result: .success(.init(accessToken: "t1", expiresIn: 60)), now: 0)
        #expect(machine.token == .init(value: "t1", refreshAt: 30, usableUntil: 45))
        guard case .use("t1") = machine.request(now: 29, waiter: "b") else { return #expect(Bool(false)) }
    }
}

/// A fetch the test answers by hand, counting calls.
final class FakeFetch: Sendable {
    private let pending = Mutex<[@Sendable (Result<FCMAccessTokenGrant, any Error>) -> Void]>([])
    private let count = Mutex(0)
    var calls: Int { count.withLock { $0 } }
    var fetch: FCMAccessTokenCache.Fetch {
        { [self] completion in
            count.withLock { $0 += 1 }
            pending.withLock { $0.append(completion) }
        }
    }
    func answer(_ result: Result<FCMAccessTokenGrant, any Error>) {
        let completions = pending.withLock { list in defer { list = [] }; return list }
        for completion in completions { completion(result) }
    }
}

@Suite struct FCMAccessTokenCacheTests {
    @Test func hundredCallersOneFetch() {
        let clock = FakeClock(0)
        let fake = FakeFetch()
        let cache = FCMAccessTokenCache(clock: clock.closure, fetch: fake.fetch)
        let results = Mutex<[Result<String, FCMTokenError>]>([])
        DispatchQueue.concurrentPerform(iterations: 100) { _ in
            cache.withAccessToken { result in results.withLock { $0.append(result) } }
        }
        #expect(fake.calls == 1)
        #expect(results.withLock { $0.isEmpty })
        fake.answer(.success(.init(accessToken: "ya29.one", expiresIn: 3599)))
        #expect(results.withLock { $0.count } == 100)
        #expect(results.withLock { $0.allSatisfy { $0 == .success("ya29.one") } })
        for _ in 0..<100 { cache.withAccessToken { #expect($0 == .success("ya29.one")) } }
        #expect(fake.calls == 1)
    }

    @Test func invalidateOn401FetchesOnceMore() async throws {
        let fake = FakeFetch()
        let cache = FCMAccessTokenCache(clock: { 0 }, fetch: fake.fetch)
        cache.withAccessToken { _ in }
        fake.answer(.success(.init(accessToken: "old", expiresIn: 3599)))
        #expect(cache.invalidate(token: "old"))
        #expect(!cache.invalidate(token: "old"))
        let got = Mutex<String?>(nil)
        cache.withAccessToken { result in got.withLock { $0 = try? result.get() } }
        #expect(fake.calls == 2)
        fake.answer(.success(.init(accessToken: "new", expiresIn: 3599)))
        #expect(got.withLock { $0 } == "new")
    }

    @Test func synchronousFetchAndAsyncAPI() async throws {
        let calls = Mutex(0)
        let cache = FCMAccessTokenCache(clock: { 0 }) { completion in
            calls.withLock { $0 += 1 }
            completion(.success(.init(accessToken: "sync", expiresIn: 3599)))  // answers on the caller's stack
        }
        #expect(try await cache.accessToken() == "sync")
        #expect(try await cache.accessToken() == "sync")
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func fetchErrorsReachCallersAsFCMTokenError() async {
        struct Boom: Error {}
        let cache = FCMAccessTokenCache(clock: { 0 }) { $0(.failure(Boom())) }
        await #expect(throws: FCMTokenError.failed(detail: "Boom()")) { try await cache.accessToken() }
    }

    @Test func fetcherSignsPostsAndParses() async throws {
        let credentials = try #require(try FCMCredentials.load(environment: ["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(tokenURI: "https://double/token")]))
        let seen = Mutex<PushHTTPRequest?>(nil)
        let fetch = FCMAccessTokenCache.fetcher(credentials: credentials, clock: { 1_754_563_200 }) { request, completion in
            seen.withLock { $0 = request }
            completion(.success(response(200, #"{"access_token":"ya29.x","expires_in":3599}"#)))
        }
        let cache = FCMAccessTokenCache(clock: { 1_754_563_200 }, fetch: fetch)
        #expect(try await cache.accessToken() == "ya29.x")
        let request = try #require(seen.withLock { $0 })
        #expect(request.url == "https://double/token")
        #expect(request.bodyText.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=ey"))

        let refused = FCMAccessTokenCache(clock: { 0 }, fetch: FCMAccessTokenCache.fetcher(credentials: credentials) { _, completion in
            completion(.success(response(400, #"{"error":"invalid_grant","error_description":"Invalid JWT: Token must be a short-lived token"}"#)))
        })
        await #expect(throws: FCMTokenError.rejected(status: 400, error: "invalid_grant", description: "Invalid JWT: Token must be a short-lived token")) {
            try await refused.accessToken()
        }
    }
}
