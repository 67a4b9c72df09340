import HeraldCore
import Testing

@Suite struct WebPushSubscriptionTests {
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    @Test func theStoredFormRoundTripsAndNamesTheOrigin() throws {
        let subscription = try WebPushSubscription(endpoint: "https://FCM.googleapis.com:443/fcm/send/abc:def", p256dh: Self.p256dh + "=",
                                                   auth: Self.auth + "==", allowLoopbackHTTP: false, allowPrivateHosts: false)
        #expect(subscription.token == "https://fcm.googleapis.com/fcm/send/abc:def#p256dh=\(Self.p256dh)&auth=\(Self.auth)")
        #expect(try WebPushSubscription(token: subscription.token) == subscription)
        #expect(subscription.origin == "https://fcm.googleapis.com")
        #expect(subscription.p256dh.count == 65 && subscription.auth.count == 16)
        let local = try WebPushSubscription(endpoint: "http://127.0.0.1:8080/push/1", p256dh: Self.p256dh, auth: Self.auth, allowLoopbackHTTP: true, allowPrivateHosts: true)
        #expect(local.origin == "http://127.0.0.1:8080" && local.isHTTP)
        #expect(try WebPushSubscription(endpoint: "https://[::1]:9/x", p256dh: Self.p256dh, auth: Self.auth, allowLoopbackHTTP: false, allowPrivateHosts: true).origin == "https://[::1]:9")
    }

    @Test func eachFieldIsCheckedAndNamed() {
        func refusal(_ endpoint: String, _ p256dh: String = Self.p256dh, _ auth: String = Self.auth, http: Bool = false) -> String? {
            do {
                _ = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, allowLoopbackHTTP: http, allowPrivateHosts: http)
                return nil
            } catch {
                return error.field
            }
        }
        for endpoint in ["", "push.example/abc", "ftp://push.example/x", "http://push.example/x", "https://user@push.example/x",
                         "https://push.example/x#frag", "https://push.example/a b", "https:///x", "http://127.0.0.1:9/x",
                         "https://push.example/" + String(repeating: "a", count: 2048)] {
            #expect(refusal(endpoint) == "subscription.endpoint", "\(endpoint.prefix(40))")
        }
        #expect(refusal("http://127.0.0.1:9/x", http: true) == nil)
        #expect(refusal("http://localhost:9/x", http: true) == nil)
        #expect(refusal("http://10.0.0.1:9/x", http: true) == "subscription.endpoint")
        let p256dhBytes = Array(Self.p256dh.utf8)
        for key in ["", "AAAA", String(decoding: p256dhBytes.dropLast(2), as: UTF8.self), "A" + Self.p256dh.dropFirst(), Self.p256dh.replacingOccurrences(of: "_", with: "/")] {
            #expect(refusal("https://push.example/x", key) == "subscription.keys.p256dh", "\(key)")
        }
        for secret in ["", "BTBZMqHH6r4Tts7J_aSI", Self.auth + "AA", "BTBZMqHH6r4Tts7J+aSIgg"] {
            #expect(refusal("https://push.example/x", Self.p256dh, secret) == "subscription.keys.auth", "\(secret)")
        }
    }

    /// A port outside 1-65535 is no address: such an endpoint was stored, and every push to it then
    /// failed in the transport and was retried for the whole retry budget. Refused at registration.
    @Test func anEndpointPortOutsideOneTo65535IsRefused() {
        for endpoint in ["https://push.example.com:0/x", "https://push.example.com:65536/x", "https://push.example.com:99999/x",
                         "https://push.example.com:99999999999999999999/x", "https://[2001:db8::1]:70000/x"] {
            #expect(throws: WebPushSubscriptionError.self, "\(endpoint)") {
                try WebPushSubscription(endpoint: endpoint, p256dh: Self.p256dh, auth: Self.auth, allowLoopbackHTTP: false, allowPrivateHosts: true)
            }
            #expect(throws: DeviceTokenError.self, "\(endpoint)") {
                try WebPushSubscription(token: endpoint + "#p256dh=\(Self.p256dh)&auth=\(Self.auth)")
            }
        }
        for endpoint in ["https://push.example.com:1/x", "https://push.example.com:65535/x", "https://push.example.com:8443/x"] {
            #expect(throws: Never.self, "\(endpoint)") {
                try WebPushSubscription(endpoint: endpoint, p256dh: Self.p256dh, auth: Self.auth, allowLoopbackHTTP: false, allowPrivateHosts: true)
            }
        }
    }

    /// Scheme and host are case-insensitive and :443 is https's default (RFC 3986 §6.2): one
    /// subscription spelled two ways registered as two devices, each pushed every notification.
    @Test func oneSubscriptionSpelledTwoWaysIsOneToken() throws {
        let tokens = try ["https://push.example.com/Sub/AbC?Q=1", "HTTPS://Push.EXAMPLE.com/Sub/AbC?Q=1",
                          "https://push.example.com:443/Sub/AbC?Q=1", "https://PUSH.example.com:443/Sub/AbC?Q=1"].map {
            try WebPushSubscription(endpoint: $0, p256dh: Self.p256dh, auth: Self.auth, allowLoopbackHTTP: false, allowPrivateHosts: true).token
        }
        #expect(Set(tokens) == ["https://push.example.com/Sub/AbC?Q=1#p256dh=\(Self.p256dh)&auth=\(Self.auth)"])
        // The stored form read back (a token registered raw) is the same canonical token.
        #expect(try WebPushSubscription(token: "https://Push.Example.COM/Sub/AbC?Q=1#p256dh=\(Self.p256dh)&auth=\(Self.auth)").token == tokens[0])
        // Another port, or another path case, is another endpoint.
        let other = try WebPushSubscription(endpoint: "https://Push.example.com:8443/sub/abc", p256dh: Self.p256dh, auth: Self.auth,
                                            allowLoopbackHTTP: false, allowPrivateHosts: true)
        #expect(other.endpoint == "https://push.example.com:8443/sub/abc")
        let ipv6 = try WebPushSubscription(endpoint: "https://[2001:DB8::1]:443/x", p256dh: Self.p256dh, auth: Self.auth,
                                           allowLoopbackHTTP: false, allowPrivateHosts: true)
        #expect(ipv6.endpoint == "https://[2001:db8::1]/x" && ipv6.origin == "https://[2001:db8::1]")
        #expect(other.origin == "https://push.example.com:8443")
    }

    @Test func aTokenWithoutKeysIsRefused() {
        #expect(throws: DeviceTokenError.self) { try WebPushSubscription(token: "https://push.example/abc") }
        #expect(throws: DeviceTokenError("auth must be the base64url of a 16-byte secret", field: "subscription.keys.auth")) {
            try WebPushSubscription(token: "https://push.example/abc#p256dh=\(Self.p256dh)")
        }
    }
}
