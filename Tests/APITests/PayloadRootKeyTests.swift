import Foundation
@testable import API
import HeraldCore
import Realtime
import Testing

/// AP-4: the root key's rules, and a call's data sent already namespaced under it (seed 004).
@Suite struct PayloadRootKeyTests {
    private func data(_ json: String, rootKey: String?) throws -> [String: String] {
        let text = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","data":"# + json + "}"
        let body = try JSONDecoder().decode(NotificationBody.self, from: Data(text.utf8))
        return try NotificationRequest(body: body, now: 1_000, catalog: .empty, payload: try PayloadOptions(rootKey: rootKey),
                                       maxLiveDataBytes: 4096).plan.data
    }

    private func refusal(_ json: String, rootKey: String?) -> String? {
        do {
            _ = try data(json, rootKey: rootKey)
            return nil
        } catch let error as HTTPError {
            return error.extra["field"]
        } catch {
            return "\(error)"
        }
    }

    @Test func anObjectUnderTheRootKeyIsTheDataItself() throws {
        #expect(try data(#"{"respondo": {"type": "message", "conversation_id": "a1"}}"#, rootKey: "respondo")
                == ["type": "message", "conversation_id": "a1"])
        #expect(try data(#"{"respondo": {"type": "message"}, "campaign": "c9"}"#, rootKey: "respondo")
                == ["type": "message", "campaign": "c9"])
        #expect(try data(#"{"type": "message"}"#, rootKey: "respondo") == ["type": "message"])
    }

    @Test func anObjectElsewhereOrAKeyGivenTwiceIsRefusedNamingIt() {
        #expect(refusal(#"{"respondo": {"type": "message"}}"#, rootKey: nil) == "data.respondo")
        #expect(refusal(#"{"other": {"type": "message"}}"#, rootKey: "respondo") == "data.other")
        #expect(refusal(#"{"respondo": {"type": "a"}, "type": "b"}"#, rootKey: "respondo") == "data.respondo.type")
        #expect(refusal(#"{"respondo": {"type": "a"}}"#, rootKey: "respondo") == nil)
        // Herald's own keys are refused inside the object as beside it.
        #expect(refusal(#"{"respondo": {"kind": "a"}}"#, rootKey: "respondo") == "data")
    }

    @Test func rootKeysFollowTheProvidersRules() throws {
        #expect(try PayloadOptions(rootKey: "respondo").rootKey == "respondo")
        #expect(try PayloadOptions(rootKey: nil) == .flat)
        for bad in ["", "aps", "APS", "from", "notification", "google.x", "gcm.y", "has space", String(repeating: "k", count: 65)] {
            #expect(throws: PayloadOptionsError.self, "\(bad)") { try PayloadOptions(rootKey: bad) }
        }
    }
}
