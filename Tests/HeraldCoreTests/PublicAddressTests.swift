import HeraldCore
import Testing

/// The address and host rules that keep client-given push endpoints (Web Push) on the public
/// internet (docs/api.md "Devices", `HERALD_WEBPUSH_ALLOW_PRIVATE`).
@Suite struct PublicAddressTests {
    @Test(arguments: [
        ("0.0.0.0", AddressRange.unspecified), ("0.1.2.3", .reserved), ("10.0.0.1", .privateUse), ("10.255.255.255", .privateUse),
        ("100.63.255.255", .global), ("100.64.0.0", .sharedCGNAT), ("100.127.255.255", .sharedCGNAT), ("100.128.0.0", .global),
        ("127.0.0.1", .loopback), ("127.255.0.9", .loopback), ("169.254.169.254", .linkLocal), ("169.253.0.1", .global),
        ("172.15.255.255", .global), ("172.16.0.1", .privateUse), ("172.31.255.255", .privateUse), ("172.32.0.0", .global),
        ("192.0.0.8", .reserved), ("192.0.2.1", .reserved), ("192.167.255.255", .global), ("192.168.1.1", .privateUse),
        ("198.18.0.1", .reserved), ("198.51.100.7", .reserved), ("203.0.113.9", .reserved), ("224.0.0.1", .multicast),
        ("239.255.255.250", .multicast), ("240.0.0.1", .reserved), ("255.255.255.255", .reserved),
        ("8.8.8.8", .global), ("142.250.74.106", .global), ("1.1.1.1", .global),
    ])
    func ipv4Ranges(text: String, range: AddressRange) throws {
        let address = try #require(IPAddress(text))
        #expect(address.isIPv4)
        #expect(address.range == range)
        #expect(address.isPublic == (range == .global))
        #expect(address.description == text)
    }

    @Test(arguments: [
        ("::", AddressRange.unspecified), ("::1", .loopback), ("::2", .reserved), ("::127.0.0.1", .reserved),
        ("::ffff:127.0.0.1", .loopback), ("::ffff:7f00:1", .loopback), ("::ffff:10.1.2.3", .privateUse),
        ("::ffff:169.254.169.254", .linkLocal), ("::ffff:100.64.0.1", .sharedCGNAT), ("::ffff:8.8.8.8", .global),
        ("64:ff9b::10.0.0.1", .privateUse), ("64:ff9b::8.8.8.8", .global), ("64:ff9b:1::1", .privateUse),
        ("2002:0a00:0001::1", .privateUse), ("2002:0808:0808::1", .global), ("100::1", .reserved),
        ("2001:db8::1", .reserved), ("2001::1", .reserved), ("fc00::1", .uniqueLocal), ("fd12:3456::1", .uniqueLocal),
        ("fe80::1", .linkLocal), ("febf::1", .linkLocal), ("fec0::1", .privateUse), ("ff02::1", .multicast),
        ("2a00:1450:4001:80e::200a", .global), ("2606:4700::1111", .global), ("2001:4860:4860::8888", .global),
    ])
    func ipv6Ranges(text: String, range: AddressRange) throws {
        let address = try #require(IPAddress(text))
        #expect(!address.isIPv4)
        #expect(address.range == range, "\(text)")
    }

    @Test func textIsParsedStrictlyAndPrintedAsRFC5952() throws {
        for bad in ["", "1.2.3", "1.2.3.4.5", "01.2.3.4", "256.1.1.1", "1.2.3.-4", "1.2.3.4 ", ":", ":::", "1::2::3", "12345::",
                    "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "::g", "fe80::1%eth0", "[::1]", "::1.2.3", "1:2:3:4:5:6:7:1.2.3.4"] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
        #expect(try #require(IPAddress("2001:DB8:0:0:1:0:0:1")).description == "2001:db8::1:0:0:1")
        #expect(try #require(IPAddress("0:0:0:0:0:ffff:7f00:1")).description == "::ffff:7f00:1")
        #expect(try #require(IPAddress("1:2:3:4:5:6:1.2.3.4")).bytes.suffix(4) == [1, 2, 3, 4])
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [10, 0, 0, 1])?.range == .privateUse)
    }

    @Test func urlParsersIPv4FormsAreReadAsLibcurlReadsThem() {
        #expect(PublicHostRule.lenientIPv4("2130706433")?.description == "127.0.0.1")
        #expect(PublicHostRule.lenientIPv4("0x7f.1")?.description == "127.0.0.1")
        #expect(PublicHostRule.lenientIPv4("0177.0.0.01")?.description == "127.0.0.1")
        #expect(PublicHostRule.lenientIPv4("10.1")?.description == "10.0.0.1")
        #expect(PublicHostRule.lenientIPv4("169.254.43518")?.description == "169.254.169.254")
        #expect(PublicHostRule.lenientIPv4("0x0A000001")?.description == "10.0.0.1")
        #expect(PublicHostRule.lenientIPv4("8.8.8.8")?.description == "8.8.8.8")
        for notIPv4 in ["4294967296", "256.1", "1.2.3.4.5", "push.example.com", "08.1.1.1", "0xg.1", "", "1..2"] {
            #expect(PublicHostRule.lenientIPv4(notIPv4) == nil, "\(notIPv4)")
        }
    }

    @Test(arguments: [
        "127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.0.10",
        "169.254.169.254", "100.64.1.1", "0.0.0.0", "0", "224.0.0.1", "255.255.255.255", "[::1]", "::1", "[::]",
        "[::ffff:127.0.0.1]", "[::ffff:a9fe:a9fe]", "[fc00::1]", "[fd00:ec2::254]", "[fe80::1]", "[fe80::1%25eth0]", "[ff02::1]",
        "[64:ff9b::a00:1]", "localhost", "LOCALHOST.", "api.localhost", "metadata", "redis", "vm", "printer.local",
        "metadata.google.internal", "router.home.arpa", "box.localdomain", "push.test", "a.invalid", "1.2.3.4.5", "example.123",
        "[not-an-address]", ".",
    ])
    func hostsThatAreNotPublicAreRefused(host: String) {
        #expect(PublicHostRule.refusal(host: host) != nil, "\(host)")
    }

    @Test(arguments: [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "wns2-par02p.notify.windows.com",
        "push.example.net", "FCM.GoogleAPIs.com.", "8.8.8.8", "[2001:4860:4860::8888]", "[::ffff:8.8.8.8]", "xn--bcher-kva.example",
    ])
    func publicHostsPass(host: String) {
        #expect(PublicHostRule.refusal(host: host) == nil, "\(host)")
    }

    @Test func theRefusalNamesTheAddressAndItsRange() {
        #expect(PublicHostRule.refusal(host: "10.0.0.1") == "10.0.0.1 is a private address, not the public internet")
        #expect(PublicHostRule.refusal(host: "2130706433") == "127.0.0.1 is a loopback address, not the public internet")
        #expect(PublicHostRule.refusal(host: "[::ffff:169.254.169.254]") == "::ffff:a9fe:a9fe is a link-local address, not the public internet")
        #expect(PublicHostRule.refusal(host: "0.0.0.0") == "0.0.0.0 is the unspecified address (this host)")
        #expect(PublicHostRule.refusal(host: "metadata")?.contains("single-label") == true)
        #expect(PublicHostRule.refusal(host: "a.localhost")?.contains(".localhost") == true)
    }

    @Test func subscriptionsOnHostsThatAreNotPublicAreRefusedUnlessAllowed() throws {
        let p256dh = WebPushSubscriptionTests.p256dh, auth = WebPushSubscriptionTests.auth
        for endpoint in ["https://127.0.0.1:9/_double/reset", "https://169.254.169.254/latest/api/token", "https://10.0.0.1:6379/",
                         "https://[::1]:5432/", "https://[::ffff:10.0.0.1]/x", "https://localhost/x", "https://2130706433/x"] {
            #expect(throws: WebPushSubscriptionError.self, "\(endpoint)") {
                try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, allowLoopbackHTTP: false, allowPrivateHosts: false)
            }
            do {
                _ = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, allowLoopbackHTTP: false, allowPrivateHosts: false)
            } catch {
                #expect(error.field == "subscription.endpoint")
                #expect(error.code == "endpoint_not_public")
                #expect(error.message.contains("HERALD_WEBPUSH_ALLOW_PRIVATE"))
            }
            let allowed = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, allowLoopbackHTTP: false, allowPrivateHosts: true)
            #expect(allowed.nonPublicHost != nil, "the provider still knows it is not public")
            #expect(try WebPushSubscription(token: allowed.token) == allowed, "the stored form reads back: the provider decides")
        }
        let public_ = try WebPushSubscription(endpoint: "https://fcm.googleapis.com/fcm/send/x", p256dh: p256dh, auth: auth,
                                              allowLoopbackHTTP: false, allowPrivateHosts: false)
        #expect(public_.nonPublicHost == nil)
    }
}
