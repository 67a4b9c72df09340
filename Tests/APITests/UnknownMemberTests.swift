@testable import API
import Realtime
import Testing

/// Every JSON body refuses a member its route does not define, naming it, at the top and in the
/// objects whose members are fixed; free maps (`data`, `args`, per-locale texts, a browser's
/// `subscription`) stay open (docs/api.md "Limits on bodies").
@Suite struct UnknownMemberTests {
    func request(_ body: String) -> HTTPRequest {
        HTTPRequest(method: .post, target: "/", headers: ["Content-Type": "application/json"], body: Array(body.utf8))
    }

    /// The `field` of the 400 `decode` throws; nil when the body is taken.
    func refusedField<T: JSONBody>(_ type: T.Type, _ body: String) -> String? {
        do {
            _ = try RequestBody.decode(type, from: request(body))
            return nil
        } catch {
            #expect(error.status == 400 && error.code == "invalid_request", "\(body): \(error)")
            return error.extra["field"] ?? "(no field)"
        }
    }

    @Test func eachRouteBodyNamesAnUnknownMember() {
        #expect(refusedField(PublishRoutes.MessageBody.self, #"{"channel":"g:1","data":1,"retian":true}"#) == "retian")
        #expect(refusedField(PublishRoutes.BatchBody.self, #"{"messages":[{"channel":"c","data":1}],"mesages":[]}"#) == "mesages")
        #expect(refusedField(PublishRoutes.BatchBody.self, #"{"messages":[{"channel":"c","data":1},{"channel":"c","data":1,"retian":1}]}"#)
                == "messages[1].retian")
        #expect(refusedField(PushRoutes.SendBody.self, #"{"user_id":"u","notification":{"title":"t","bdoy":"b"}}"#) == "notification.bdoy")
        #expect(refusedField(PushRoutes.SendBody.self, #"{"user_id":"u","notification":{"title":"t"},"x":1}"#) == "x")
        #expect(refusedField(DeviceRoutes.RegisterBody.self, #"{"platform":"android","token":"t","lcoale":"pt"}"#) == "lcoale")
        #expect(refusedField(PreferenceRoutes.ScopeBody.self, #"{"is_enabled":true,"enabled_event":[]}"#) == "enabled_event")
        #expect(refusedField(PresenceRoutes.StateBody.self, #"{"state":"foreground","x":null}"#) == "x")
        #expect(refusedField(PresenceRoutes.AcksBody.self, #"{"ids":[],"id":"1"}"#) == "id")
        #expect(refusedField(SessionRoutes.ExpiryBody.self, #"{"expires_at":null,"expires":1}"#) == "expires")
        #expect(refusedField(MemberRoutes.PutBody.self, #"{"permissions":[],"role":"x"}"#) == "role")
        #expect(refusedField(DevRoutes.TokenBody.self, #"{"user_id":"u","ttl":60}"#) == "ttl")
        #expect(refusedField(NotificationBody.self, #"{"recipients":{"user_ids":["a"]},"kind":"k","live":{"channel":"c","retian":true}}"#)
                == "live.retian")
    }

    /// lows13: a whole-number member with a fractional part is a 400 naming it, at any depth;
    /// Foundation's decoder refused `1.5` without naming it.
    @Test func wholeNumbersRefuseAFractionalPartNamingTheMember() {
        #expect(refusedField(DevRoutes.TokenBody.self, #"{"user_id":"u","ttl_seconds":60.5}"#) == "ttl_seconds")
        #expect(refusedField(JobRoutes.RetryDeadBody.self, #"{"dead_since":1.7e-12}"#) == "dead_since")
        #expect(refusedField(JobRoutes.RetryDeadBody.self, #"{"provider":"apns","dead_until":1700000000000.25}"#) == "dead_until")
        #expect(refusedField(JobRoutes.RetryDeadBody.self, #"{"dead_until":9223372036854775808.0}"#) == "dead_until")
        #expect(refusedField(PushRoutes.SendBody.self, #"{"user_id":"u","notification":{"title":"t","ttl_seconds":1e-2}}"#)
                == "notification.ttl_seconds")
        #expect(refusedField(PushRoutes.SendBody.self, #"{"user_id":"u","notification":{"data":{"n":"1e2"},"badge":2.5}}"#)
                == "notification.badge")
        // Integers, nulls, strings inside free maps and a number elsewhere pass.
        #expect(refusedField(JobRoutes.RetryDeadBody.self, #"{"dead_since":1700000000000,"dead_until":null}"#) == nil)
        #expect(refusedField(PushRoutes.SendBody.self, #"{"user_id":"u","notification":{"title":"t","badge":-1,"ttl_seconds":0}}"#) == nil)
        #expect(refusedField(JobRoutes.RetryDeadBody.self, #"{"kind":"push.deliver","dead_since":-0}"#) == nil)
        // The unknown member is still named first when it comes first.
        #expect(refusedField(JobRoutes.RetryDeadBody.self, #"{"dead_provider":"apns"}"#) == "dead_provider")
    }

    /// api14 (ADR 0029): a whole value however written is taken, and decoded as its digits, even
    /// where Foundation's decoder alone refuses the spelling (`9223372036854775807.0`).
    @Test func wholeValuesHoweverWrittenAreDecodedAsTheirDigits() throws {
        let dev = try RequestBody.decode(DevRoutes.TokenBody.self, from: request(#"{"user_id":"u","ttl_seconds":6e1}"#))
        #expect(dev.ttl_seconds == 60)
        let jobs = try RequestBody.decode(JobRoutes.RetryDeadBody.self,
                                          from: request(#"{"dead_since":1.7e12,"kind":"k","dead_until":9223372036854775807.0}"#))
        #expect(jobs.dead_since == 1_700_000_000_000 && jobs.dead_until == Int64.max && jobs.kind == "k")
        let push = try RequestBody.decode(PushRoutes.SendBody.self,
                                          from: request(#"{"user_id":"u","notification":{"data":{"n":"1e2"},"badge":2.0,"ttl_seconds":1.0E2}}"#))
        #expect(push.notification.badge == 2 && push.notification.ttl_seconds == 100 && push.notification.data == ["n": "1e2"])
    }

    @Test func freeMapsStayOpen() {
        #expect(refusedField(PublishRoutes.MessageBody.self, #"{"channel":"c","data":{"anything":{"deep":[1]}}}"#) == nil)
        #expect(refusedField(PushRoutes.SendBody.self, #"{"user_id":"u","notification":{"title":"t","data":{"k":"v"}}}"#) == nil)
        #expect(refusedField(DeviceRoutes.RegisterBody.self,
                             #"{"platform":"web","subscription":{"endpoint":"https://p.example/x","expirationTime":null,"keys":{"p256dh":"a","auth":"b"},"extra":1}}"#) == nil)
        #expect(refusedField(NotificationBody.self,
                             #"{"recipients":{"user_ids":["a"]},"kind":"k","title":{"pt":"x"},"args":{"n":"1"},"live":{"channel":"c","data":{"free":1}}}"#) == nil)
    }

    /// `POST /v1/notifications` as the route reads it: the scanner for the usual body, the decoder
    /// for one with `live`; both refuse the same members.
    @Test func notificationsRefuseOnBothPaths() {
        for (body, field) in [(#"{"recipients":{"user_ids":["a"]},"kind":"k","tilte":"x"}"#, "tilte"),
                              (#"{"recipients":{"user_ids":["a"]},"kind":"k","live":{"channel":"c"},"tilte":"x"}"#, "tilte"),
                              (#"{"recipients":{"user_ids":["a"]},"kind":"k","live":{"channel":"c"},"push":{"polcy":"x"}}"#, "push.polcy")] {
            do {
                _ = try NotificationRoutes.body(request(body))
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.status == 400 && error.extra["field"] == field, "\(body): \(error)")
            }
        }
    }

    /// The compatibility routes keep what the seeds' apps send working.
    @Test func compatibilityBodiesStayLenient() throws {
        let body = try RequestBody.decode(lenient: DeviceRoutes.DeviceTokenBody.self,
                                          from: request(#"{"token":"t","platform":"ios","appVersion":"1","extra":true}"#))
        #expect(body.token == "t")
    }
}
