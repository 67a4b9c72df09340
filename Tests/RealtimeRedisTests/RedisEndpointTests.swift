import Testing
@testable import RealtimeRedis

/// `HERALD_BROKER` values: what parses and what is refused (needs no server).
@Suite struct RedisEndpointTests {
    @Test func parsesHostPortAndDatabase() {
        #expect(RedisEndpoint(url: "redis://127.0.0.1:6379/0") == RedisEndpoint(host: "127.0.0.1", port: 6379, database: 0))
        #expect(RedisEndpoint(url: "redis://cache.internal") == RedisEndpoint(host: "cache.internal", port: 6379, database: 0))
        #expect(RedisEndpoint(url: "redis://10.0.0.5:7000/3") == RedisEndpoint(host: "10.0.0.5", port: 7000, database: 3))
        #expect(RedisEndpoint(url: "redis://h:1/") == RedisEndpoint(host: "h", port: 1, database: 0))
        #expect(RedisEndpoint(url: "redis://h:6380/2")?.description == "redis://h:6380/2")
        // breaker11: an IPv6 literal is bracketed, and given to hiredis bare.
        #expect(RedisEndpoint(url: "redis://[::1]:6380/1") == RedisEndpoint(host: "::1", port: 6380, database: 1))
        #expect(RedisEndpoint(url: "redis://[fd00::5]") == RedisEndpoint(host: "fd00::5", port: 6379, database: 0))
        #expect(RedisEndpoint(url: "redis://[::1]:6380/1")?.description == "redis://[::1]:6380/1")
    }

    @Test(arguments: ["", "redis://", "rediss://h:6379", "http://h:6379", "redis://:6379", "redis://h:0", "redis://h:65536",
                      "redis://h:abc", "redis://h:+1", "redis://user:pw@h:6379", "redis://h:6379/x", "redis://h:6379/-1",
                      "redis://h:6379/1/2", "redis://h:6379/1?x=y", "redis://h:6379?x", "redis://h:6379/123456",
                      // breaker11: a mistyped IPv6 literal was taken as a host name and failed at every connect.
                      "redis://[::1:6379", "redis://::1:6379", "redis://[::1]6379", "redis://[]:6379", "redis://[h]:6379", "redis://h]:6379"])
    func refuses(_ url: String) {
        #expect(RedisEndpoint(url: url) == nil)
    }

    @Test func redactedHidesUserInfoOnly() {
        #expect(RedisEndpoint.redacted(url: "redis://:s3cret@h:6379/0") == "redis://***@h:6379/0")
        #expect(RedisEndpoint.redacted(url: "redis://user:p@ss@h:6379") == "redis://***@h:6379")
        #expect(RedisEndpoint.redacted(url: "redis://h:6379/0") == "redis://h:6379/0")
        #expect(RedisEndpoint.redacted(url: "redis://h:6379/0?x=a@b") == "redis://h:6379/0?x=a@b", "an @ past the authority is not user info")
        #expect(RedisEndpoint.redacted(url: "not a url") == "not a url")
    }

    @Test func scriptShaIsTheSHA1OfItsSource() {
        // SHA-1 of the empty string and of "abc" (FIPS 180 test vectors).
        #expect(RedisScript("").sha1 == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(RedisScript("abc").sha1 == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test func framesRoundTripTheScriptsLayout() {
        let bytes = Array("0000002a\n7\n3\n5\n1\nstatus\ngeneration:9\n{\"a\":\"x\\ny\"}".utf8)
        let frame = BrokerFrame(bytes)
        #expect(frame?.epoch == 42 && frame?.sequence == 7 && frame?.offset == 3 && frame?.previous == 5)
        #expect(frame?.retain == true && frame?.event.rawValue == "status" && frame?.channel.rawValue == "generation:9")
        #expect(frame?.data == "{\"a\":\"x\\ny\"}")
        #expect(BrokerFrame(Array("nonsense".utf8)) == nil)
        #expect(BrokerFrame(Array("2a\n7\n3\n5\n1\nstatus\ngeneration:9\n{}".utf8)) == nil, "an epoch is 8 hex digits")
        #expect(BrokerFrame(Array("0000002a\n7\n3\n5\n1\nbad event\ngeneration:9\n{}".utf8)) == nil)
        #expect(BrokerFrame.epochText(42) == "0000002a")
    }
}
