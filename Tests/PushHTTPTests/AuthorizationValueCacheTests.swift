import Testing

@testable import PushHTTP

@Suite struct AuthorizationValueCacheTests {
    @Test func buildsPrefixAndTokenAndKeepsItWhileTheTokenStays() {
        let cache = AuthorizationValueCache(prefix: "Bearer ")
        let first = cache.value(for: "ya29.one")
        #expect(first == "Bearer ya29.one")
        #expect(cache.value(for: "ya29.one") == "Bearer ya29.one")
        // A built (not literal) equal token still finds the kept value.
        #expect(cache.value(for: String("ya29.one".reversed().reversed())) == "Bearer ya29.one")
    }

    @Test func aNewTokenReplacesTheKeptValue() {
        let cache = AuthorizationValueCache(prefix: "bearer ")
        #expect(cache.value(for: "jwt-1") == "bearer jwt-1")
        #expect(cache.value(for: "jwt-2") == "bearer jwt-2")
        #expect(cache.value(for: "jwt-1") == "bearer jwt-1")
    }
}
