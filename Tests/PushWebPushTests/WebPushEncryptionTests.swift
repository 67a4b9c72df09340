import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushWebPush

/// RFC 8291 Appendix A: the worked example, keys and salt given, byte for byte.
enum RFC8291Example {
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let applicationServerPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let applicationServerPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let userAgentPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    static let userAgentPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static var subscription: WebPushSubscription {
        try! WebPushSubscription(endpoint: "https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV",
                                 p256dh: userAgentPublic, auth: authSecret, allowLoopbackHTTP: false, allowPrivateHosts: false)
    }
}

@Suite struct WebPushEncryptionTests {
    @Test func theRFC8291ExampleEncryptsByteForByte() throws {
        let server = try P256KeyPair(privateScalar: Base64URL.decode(RFC8291Example.applicationServerPrivate)!)
        #expect(Base64URL.encode(server.publicKey) == RFC8291Example.applicationServerPublic)
        let body = try WebPushEncryption.encrypt(Array(RFC8291Example.plaintext.utf8), to: RFC8291Example.subscription,
                                                 ephemeral: server, salt: Base64URL.decode(RFC8291Example.salt)!)
        #expect(Base64URL.encode(body) == RFC8291Example.body)
    }

    @Test func theUserAgentDecryptsWhatWeEncrypt() throws {
        let userAgent = try P256KeyPair(privateScalar: Base64URL.decode(RFC8291Example.userAgentPrivate)!)
        let auth = Base64URL.decode(RFC8291Example.authSecret)!
        #expect(WebPushEncryption.decrypt(Base64URL.decode(RFC8291Example.body)!, userAgent: userAgent, auth: auth)
                == Array(RFC8291Example.plaintext.utf8))
        let message = Array("{\"title\":\"héllo\"}".utf8)
        let first = try WebPushEncryption.encrypt(message, to: RFC8291Example.subscription)
        let second = try WebPushEncryption.encrypt(message, to: RFC8291Example.subscription)
        // A fresh key and salt per message: the same text never gives the same body.
        #expect(first != second)
        #expect(first.count == message.count + 103)
        #expect(Array(first[16..<21]) == [0x00, 0x00, 0x10, 0x00, 65])
        for body in [first, second] {
            #expect(WebPushEncryption.decrypt(body, userAgent: userAgent, auth: auth) == message)
        }
        // Another auth secret derives another key: the tag does not verify.
        #expect(WebPushEncryption.decrypt(first, userAgent: userAgent, auth: [UInt8](repeating: 7, count: 16)) == nil)
    }

    @Test func aKeyOffTheCurveIsRefused() throws {
        var point = Base64URL.decode(RFC8291Example.userAgentPublic)!
        point[64] ^= 0x01
        #expect(throws: WebPushCryptoError.invalidPublicKey) { try P256PublicKey(uncompressed: point) }
        let subscription = try WebPushSubscription(endpoint: "https://push.example/x", p256dh: Base64URL.encode(point),
                                                   auth: RFC8291Example.authSecret, allowLoopbackHTTP: false, allowPrivateHosts: false)
        #expect(throws: WebPushCryptoError.invalidPublicKey) { try WebPushEncryption.encrypt([1], to: subscription) }
    }

    @Test func privateScalarsOutsideTheGroupAreRefused() {
        #expect(throws: WebPushCryptoError.self) { try P256KeyPair(privateScalar: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: WebPushCryptoError.self) { try P256KeyPair(privateScalar: [UInt8](repeating: 0xFF, count: 32)) }
        #expect(throws: WebPushCryptoError.self) { try P256KeyPair(privateScalar: [1, 2, 3]) }
    }

    @Test func aKeyPairSurvivesItsScalarAndPEMForms() throws {
        let pair = try P256KeyPair.generate()
        #expect(pair.publicKey.count == 65 && pair.publicKey[0] == 0x04)
        #expect(try P256KeyPair(privateScalar: pair.privateScalar()).publicKey == pair.publicKey)
        let pem = try pair.pem()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try P256KeyPair(pem: pem).publicKey == pair.publicKey)
        #expect(throws: WebPushCryptoError.self) { try P256KeyPair(pem: TestKeys.rsa2048) }
    }
}
