import Testing

@testable import Digests

/// SHA-256 against FIPS 180-2's examples and digests from Python's hashlib for every padding
/// shape (tails of 55, 56, 63, 64 … bytes), and HMAC-SHA256 against RFC 4231 §4.
@Suite struct SHA256Tests {
    @Test func fipsExamples() {
        #expect(hexText(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hexText(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hexText(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(hexText(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000)))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Lengths around each block and padding boundary: a tail with no room for the length needs
    /// a second padding block.
    @Test(arguments: [
        (1, "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        (55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (57, "2fe741af801cc238602ac0ec6a7b0c3a8a87c7fc7d7f02a3fe03d1c12eac4d8f"),
        (63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (111, "60780e9451bdc43cf4530ffc95cbb0c4eb24dae2c39f55f334d679e076c08065"),
        (112, "09373f127d34e61dbbaa8bc4499c87074f2ddb10e1b465f506d7d70a15011979"),
        (119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"),
        (127, "92ca0fa6651ee2f97b884b7246a562fa71250fedefe5ebf270d31c546bfea976"),
        (128, "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"),
        (129, "5099c6a56203f9687f7d33f4bfdf576d31dc91f6b695ecea38b2770c87631135"),
        (1000, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"),
    ])
    func paddingShapes(length: Int, expected: String) {
        let bytes = (0..<length).map { UInt8($0 % 251) }
        #expect(hexText(SHA256.hash(bytes)) == expected)
        #expect(SHA256.hexDigest(bytes) == expected)
    }

    @Test func hashesBytesThatAreNotAligned() {
        // The input is read with unaligned loads: a slice starting at an odd address hashes the same.
        let bytes = [UInt8](repeating: 0, count: 1) + (0..<129).map { UInt8($0 % 251) }
        let digest = bytes.withUnsafeBytes { SHA256.hash(UnsafeRawBufferPointer(rebasing: $0[1...])) }
        #expect(hexText(digest) == "5099c6a56203f9687f7d33f4bfdf576d31dc91f6b695ecea38b2770c87631135")
    }

    /// RFC 4231 §4.2–4.8 (test case 5 truncates the output, which Herald never does).
    @Test(arguments: [
        ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        (Array(1...25), [UInt8](repeating: 0xcd, count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ([UInt8](repeating: 0xaa, count: 131),
         Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func rfc4231(key: [UInt8], message: [UInt8], expected: String) {
        #expect(hexText(HMACSHA256(key: key).authenticationCode(for: message)) == expected)
    }

    /// Keys at the block size's edges: empty (all zero pad), exactly one block (used as is), one
    /// byte over (hashed first).
    @Test func keysAtTheBlockEdges() {
        let message = Array("abc".utf8)
        #expect(hexText(HMACSHA256(key: []).authenticationCode(for: message))
            == "fd7adb152c05ef80dccf50a1fa4c05d5a3ec6da95575fc312ae7c5d091836351")
        #expect(hexText(HMACSHA256(key: [UInt8](repeating: 0x6b, count: 64)).authenticationCode(for: message))
            == "ae0c0e4a2340cf50185eb46aaa8723f4769153661612e212fb0d1fa3170c6202")
        #expect(hexText(HMACSHA256(key: [UInt8](repeating: 0x6b, count: 65)).authenticationCode(for: message))
            == "ed378e5dfa30dc98814ba09b2e610d9b6af66054922ceef9480da094a3f11b2d")
    }

    @Test func oneKeyGivesTheSameCodeEveryTime() {
        // The precomputed pads are copied per message, never consumed.
        let key = HMACSHA256(key: Array("Jefe".utf8))
        let first = key.authenticationCode(for: Array("what do ya want for nothing?".utf8))
        _ = key.authenticationCode(for: [UInt8](repeating: 1, count: 300))
        #expect(key.authenticationCode(for: Array("what do ya want for nothing?".utf8)) == first)
    }

    @Test func constantTimeEqualCompares() {
        #expect(HMACSHA256.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!HMACSHA256.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!HMACSHA256.constantTimeEqual([1, 2, 3], [9, 2, 3]))
        #expect(!HMACSHA256.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(HMACSHA256.constantTimeEqual([], []))
    }
}
