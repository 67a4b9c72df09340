import Testing

@testable import Digests

/// SHA-1 against FIPS 180-2's examples and digests from Python's hashlib for every padding shape.
@Suite struct SHA1Tests {
    @Test func fipsExamples() {
        #expect(hexText(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hexText(SHA1.hash([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hexText(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }

    @Test(arguments: [
        (1, "5ba93c9db0cff93f52b521d7420e43f6eda2784f"),
        (55, "8ae2d46729cfe68ff927af5eec9c7d1b66d65ac2"),
        (56, "636e2ec698dac903498e648bd2f3af641d3c88cb"),
        (63, "6d942da0c4392b123528f2905c713a3ce28364bd"),
        (64, "c6138d514ffa2135bfce0ed0b8fac65669917ec7"),
        (65, "69bd728ad6e13cd76ff19751fde427b00e395746"),
        (119, "41c89d06001bab4ab78736b44efe7ce18ce6ae08"),
        (120, "d3dbd653bd8597b7475321b60a36891278e6a04a"),
        (1000, "c9c960a0b925474fab83942cc27d504fc24ac37b"),
    ])
    func paddingShapes(length: Int, expected: String) {
        #expect(hexText(SHA1.hash((0..<length).map { UInt8($0 % 251) })) == expected)
    }
}
