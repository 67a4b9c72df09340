import PushHTTP
import Testing

/// AES-256-GCM sealing of secrets at rest (AP-2): round trip, binding to app and field, rotation,
/// tampering and bad keys.
@Suite struct SecretBoxTests {
    private let keyA = [UInt8](repeating: 7, count: 32)
    private let keyB = [UInt8](0..<32)

    @Test func aSealedSecretOpensWithTheSameKeyAndContextOnly() throws {
        let box = try SecretBox(key: keyA)
        let sealed = try box.seal(Array("-----BEGIN PRIVATE KEY-----".utf8), context: "chat/apns_key_p8")
        #expect(!sealed.contains("BEGIN"))
        #expect(try box.open(sealed, context: "chat/apns_key_p8") == Array("-----BEGIN PRIVATE KEY-----".utf8))
        #expect(throws: SecretBoxError.authenticationFailed) { try box.open(sealed, context: "other/apns_key_p8") }
        #expect(throws: SecretBoxError.authenticationFailed) { try box.open(sealed, context: "chat/fcm_service_account") }
        // A fresh nonce each time: the same secret never seals to the same text.
        #expect(try box.seal([1, 2, 3], context: "c") != box.seal([1, 2, 3], context: "c"))
        #expect(try box.open(try box.seal([], context: "c"), context: "c") == [])
    }

    @Test func rotationOpensOldValuesAndSealsWithTheNewKey() throws {
        let old = try SecretBox(key: keyA)
        let sealed = try old.seal([9, 9], context: "c")
        let rotated = try SecretBox(key: keyB, previous: [keyA])
        #expect(try rotated.open(sealed, context: "c") == [9, 9])
        #expect(rotated.needsReseal(sealed))
        let resealed = try rotated.seal([9, 9], context: "c")
        #expect(!rotated.needsReseal(resealed))
        let withoutOld = try SecretBox(key: keyB)
        #expect(throws: SecretBoxError.unknownKey(old.keyID)) { try withoutOld.open(sealed, context: "c") }
    }

    @Test func tamperedOrMalformedEnvelopesAreRefused() throws {
        let box = try SecretBox(key: keyA)
        let sealed = try box.seal(Array("secret".utf8), context: "c")
        var parts = sealed.split(separator: ".").map(String.init)
        var body = Base64URL.decode(parts[3])!
        body[0] ^= 1
        parts[3] = Base64URL.encode(body)
        #expect(throws: SecretBoxError.authenticationFailed) { try box.open(parts.joined(separator: "."), context: "c") }
        for bad in ["", "v1", "v2.a.b.c", "v1.\(box.keyID).AAAA.AAAA", "v1.\(box.keyID).!!.AAAA"] {
            #expect(throws: SecretBoxError.malformed) { try box.open(bad, context: "c") }
        }
    }

    @Test func keysMustBe32Bytes() throws {
        #expect(throws: SecretBoxError.self) { try SecretBox(key: [1, 2, 3]) }
        #expect(throws: SecretBoxError.self) { try SecretBox(key: keyA, previous: [[1]]) }
        #expect(try SecretBox.key(fromText: "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n") == keyA)
        #expect(try SecretBox.key(fromText: "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc") == keyA)
        #expect(throws: SecretBoxError.self) { try SecretBox.key(fromText: "c2hvcnQ=") }
        #expect(throws: SecretBoxError.self) { try SecretBox.key(fromText: "not base64 at all!") }
        #expect(SecretBox.fingerprint(Array("abc".utf8)) == "ba7816bf8f01cfea")
    }

    /// FIPS 180-2's vectors, every digit written (the table, not a formatter, writes them).
    @Test func sha256HexIsTheWholeLowerCaseDigest() {
        #expect(SecretBox.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SecretBox.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SecretBox.sha256Hex(Array(repeating: 0xff, count: 1000)).utf8.count == 64)
    }
}
