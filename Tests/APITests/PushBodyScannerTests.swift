import Foundation
import Testing
@testable import API

/// The `POST /v1/push` fast path reads what the decoder would, and steps aside for everything else.
@Suite struct PushBodyScannerTests {
    func scan(_ text: String) -> PushRoutes.SendBody? {
        let bytes = Array(text.utf8)
        #expect(JSONSyntax.check(bytes, maxDepth: 64) == nil, "test bodies are valid JSON: \(text)")
        return PushBodyScanner.scan(bytes)
    }

    func decoded(_ text: String) throws -> PushRoutes.SendBody {
        try JSONDecoder().decode(PushRoutes.SendBody.self, from: Data(text.utf8))
    }

    @Test("every body it takes is the decoder's reading of it", arguments: [
        #"{"device_ids":["d1","d2"],"notification":{"kind":"alert","title":"Benchmark","body":"One of many pushes","data":{"source":"bench"}}}"#,
        #" { "user_id" : "u\u00e9\"1" , "notification" : { "body" : "x\ny" , "badge" : 3 , "ttl_seconds" : 0 } } "#,
        #"{"user_id":null,"device_ids":["a"],"notification":{"title":null,"subtitle":"s","sound":"default","priority":"high","collapse_key":"c","thread_id":"t","android_channel_id":"ch","kind":"wakeup","data":{},"badge":-1,"ttl_seconds":2419200}}"#,
        #"{"notification":{},"device_ids":[]}"#,
    ])
    func takesWhatTheDecoderTakes(_ text: String) throws {
        let body = try #require(scan(text))
        #expect(body == (try decoded(text)))
    }

    /// api14 (ADR 0029): a whole value however written is the number the digits give.
    @Test func takesAWholeValueHoweverWritten() throws {
        let body = try #require(scan(#"{"device_ids":["d1"],"notification":{"title":"t","badge":1.0,"ttl_seconds":3.6e3}}"#))
        #expect(body.notification.badge == 1 && body.notification.ttl_seconds == 3600)
    }

    @Test("anything else is left to the decoder, whose 400 names the field", arguments: [
        #"{"device_ids":["d1"],"notification":{"title":"t"},"extra":1}"#,          // an unknown member
        #"{"device_ids":["d1"],"notification":{"title":"t","sond":"x"}}"#,        // one in notification
        #"{"device_ids":["d1"]}"#,                                                  // no notification
        #"{"device_ids":["d1"],"notification":null}"#,
        #"{"device_ids":"d1","notification":{}}"#,                                  // wrong types
        #"{"device_ids":["d1",2],"notification":{}}"#,
        #"{"user_id":7,"notification":{}}"#,
        #"{"device_ids":["d1"],"notification":{"badge":1.5}}"#,                   // not a whole number
        #"{"device_ids":["d1"],"notification":{"ttl_seconds":1e-2}}"#,
        #"{"device_ids":["d1"],"notification":{"badge":99999999999999999999}}"#,
        #"{"device_ids":["d1"],"notification":{"data":{"a":1}}}"#,
        #"{"device_ids":["d1"],"notification":{"data":{"a":null}}}"#,
        #"["d1"]"#,
    ])
    func leavesTheRest(_ text: String) {
        #expect(scan(text) == nil)
    }
}
