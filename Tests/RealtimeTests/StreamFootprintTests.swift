import Testing
@testable import Realtime

/// The objects every idle SSE stream keeps (issue 17: ≤ 1.2 KiB per idle stream): a field that
/// takes one past glibc's size class costs 16 bytes more for each of 10,000 streams, so their
/// sizes are pinned here.
@Suite struct StreamFootprintTests {
    /// A class's instance size (bytes, header included), as Swift allocates it: read from the
    /// class metadata, which without Objective-C interop is the kind, the superclass, flags, the
    /// instance address point, then the size (UInt32).
    static func instanceSize(_ type: AnyClass) -> Int {
        Int(unsafeBitCast(type, to: UnsafeRawPointer.self).load(fromByteOffset: 24, as: UInt32.self))
    }

    /// glibc's block for a request of `size` bytes: the size word added, rounded up to 16.
    static func mallocBlock(_ size: Int) -> Int { max(32, (size + 8 + 15) & ~15) }

    private final class WordAndHalf {
        var word = 0
        var half: Int32 = 0
    }

    @Test func theMetadataGivesTheInstanceSize() {
        #expect(Self.instanceSize(WordAndHalf.self) == 16 + 8 + 4)
    }

    @Test func aConnectionFitsA176ByteBlock() {
        #expect(Self.mallocBlock(Self.instanceSize(HTTPConnection.self)) <= 176)
    }

    @Test func anEventStreamFitsA112ByteBlock() {
        #expect(Self.mallocBlock(Self.instanceSize(HTTPConnection.EventStream.self)) <= 112)
    }
}
