import Testing
@testable import Realtime

@Suite struct WebSocketHandshakeTests {
    @Test func acceptValueMatchesTheRFCExample() {
        // RFC 6455 §1.3.
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func acceptValueOfOtherKeys() {
        // Values computed independently (Python: base64(sha1(key + GUID))).
        #expect(WebSocketHandshake.acceptValue(forKey: "x3JJHMbDL1EzLkh9GBhXDw==") == "HSmrc0sMlYUkAGmm5OPpG2HaGWk=")
        #expect(WebSocketHandshake.acceptValue(forKey: "").count == 28)
    }

    @Test(arguments: [
        ("dGhlIHNhbXBsZSBub25jZQ==", true),
        ("AAAAAAAAAAAAAAAAAAAAAA==", true),
        ("/+/+/+/+/+/+/+/+/+/+/w==", true),
        ("x3JJHMbDL1EzLkh9GBhXDw==", true),
        ("", false),
        ("dGhlIHNhbXBsZSBub25jZQ=", false),          // 23 characters
        ("dGhlIHNhbXBsZSBub25jZQ===", false),        // 25 characters
        ("dGhlIHNhbXBsZSBub25jZQ", false),           // padding missing
        ("dGhlIHNhbXBsZSBub25jZXk=", false),         // 17 bytes
        ("dGhlIHNhbXBsZSBub25j", false),             // 15 bytes
        ("dGhlIHNhbXBsZSBub25jZ-==", false),         // base64url alphabet
        ("dGhlIHNhbXBsZSBub25jZ_==", false),
        (" dGhlIHNhbXBsZSBub25jZQ==", false),
        ("dGhlIHNhbXBsZSBub25j ZQ=", false),
        ("dGhlIHNhbXBsZSBub25jZQ==\n", false),
        ("dGhlIHNhbXBsZSBub25jZ==A", false),
        ("ÿGhlIHNhbXBsZSBub25jZQ==", false),
    ])
    func keyValidation(_ key: String, _ valid: Bool) {
        #expect(WebSocketHandshake.isValidKey(key) == valid)
    }
}
