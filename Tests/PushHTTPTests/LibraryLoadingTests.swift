import CDynamicLoad
import CNGHTTP2Shim
import Glibc
import Testing

@testable import PushHTTP

/// CDynamicLoad: libcurl, libnghttp2, libz, libpq and libhiredis are opened on first use; a library that is missing,
/// or lacks a function, is reported with its reason instead of crashing at the first call.
struct LibraryLoadingTests {
    /// Runs `herald_library_open` on C string arrays built from `sonames` and `symbols`.
    private static func open(_ sonames: [String], _ symbols: [String], package: String = "libtest1")
        -> (status: Int32, error: String, slots: [UnsafeMutableRawPointer?]) {
        let cSonames = sonames.map { strdup($0) } + [nil]
        let cSymbols = symbols.map { strdup($0) } + [nil]
        defer { (cSonames + cSymbols).forEach { free($0) } }
        var slots = [UnsafeMutableRawPointer?](repeating: nil, count: symbols.count)
        var error = [CChar](repeating: 0, count: 512)
        let constSonames: [UnsafePointer<CChar>?] = cSonames.map { $0.map { UnsafePointer($0) } }
        let constSymbols: [UnsafePointer<CChar>?] = cSymbols.map { $0.map { UnsafePointer($0) } }
        let status = constSonames.withUnsafeBufferPointer { names in
            constSymbols.withUnsafeBufferPointer { functions in
                slots.withUnsafeMutableBufferPointer { slotBuffer in
                    error.withUnsafeMutableBufferPointer { text in
                        herald_library_open(names.baseAddress!, functions.baseAddress!, slotBuffer.baseAddress!,
                                            package, text.baseAddress!, text.count)
                    }
                }
            }
        }
        return (status, String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), slots)
    }

    @Test func aMissingLibraryNamesItsSonameAndPackage() {
        let result = Self.open(["libherald-missing.so.7"], ["anything"], package: "libherald-missing7")
        #expect(result.status == -1)
        #expect(result.error.contains("libherald-missing.so.7"))
        #expect(result.error.contains("install Debian's libherald-missing7"))
        #expect(result.slots == [nil])
    }

    @Test func theFirstSonameThatOpensIsUsed() {
        // libc is always there; the first name is not.
        let result = Self.open(["libherald-missing.so.7", "libc.so.6"], ["strlen", "memcpy"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.slots.allSatisfy { $0 != nil })
    }

    @Test func aMissingFunctionNamesItAndLeavesNoSlotSet() {
        let result = Self.open(["libc.so.6"], ["strlen", "herald_no_such_function"], package: "libc6")
        #expect(result.status == -1)
        #expect(result.error == "libc.so.6 has no function herald_no_such_function (a libc6 older than this build expects)")
        #expect(result.slots == [nil, nil])
    }

    @Test func libnghttp2LoadsEveryFunctionTheNativeClientCalls() {
        let reason = herald_nghttp2_load().map { String(cString: $0) }
        #expect(reason == nil)
    }

    @Test func libcurlLoadsAndItsGlobalInitRuns() throws {
        try HTTP2Client.loadLibrary()
        #expect(curlStartFailure == nil)
    }
}
