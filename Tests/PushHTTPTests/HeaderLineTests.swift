import Testing

@testable import PushHTTP

/// The request header lines handed to libcurl (issue 17: built in one buffer per header).
@Suite struct HeaderLineTests {
    private func line(_ name: String, _ value: String) -> (String, CurlDriver.HeaderRole)? {
        CurlDriver.headerLine(name: name, value: value).map { (String(cString: $0.line), $0.role) }
    }

    @Test func linesAreNameColonSpaceValueAndAnEmptyValueIsASemicolon() {
        #expect(line("apns-push-type", "alert")! == ("apns-push-type: alert", .other))
        #expect(line("authorization", "bearer eyJ.x.y")! == ("authorization: bearer eyJ.x.y", .other))
        #expect(line("x-empty", "")! == ("x-empty;", .other))
        #expect(line("x-utf8", "café ☕")! == ("x-utf8: café ☕", .other))
    }

    @Test func theHeadersLibcurlTreatsApartAreFoundInAnyCase() {
        #expect(line("accept", "*/*")?.1 == .accept)
        #expect(line("Content-Type", "application/json")?.1 == .contentType)
        #expect(line("ACCEPT-ENCODING", "gzip")?.1 == .acceptEncoding)
        #expect(line("accept-charset", "utf-8")?.1 == .other)
        #expect(line("acceptx", "1")?.1 == .other)
        #expect(line("content_type", "a")?.1 == .other)
    }

    @Test func invalidNamesAndInjectedValuesAreRefused() {
        for name in ["", "bad name", "colon:name", "tab\tname", "é", "del\u{7F}"] {
            #expect(line(name, "v") == nil, "name \(name.debugDescription)")
        }
        for value in ["a\r\nx-injected: 1", "a\nb", "a\rb", "nul\u{0}"] {
            #expect(line("x-ok", value) == nil, "value \(value.debugDescription)")
        }
    }
}
