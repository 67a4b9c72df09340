// libFuzzer entry point for `scripts/fuzz jwt`: the invariants are `JWTFuzzOracle`'s, the same the
// seeded loop in `swift test` checks. Not part of any SwiftPM target.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    if let failure = JWTFuzzOracle.check(input).failure {
        fatalError("invariant violated: " + failure)
    }
    return 0
}
