import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushAPNs

@Suite struct APNsCredentialsTests {
    let full: [String: String] = [
        "APNS_KEY_P8": TestKeys.ecP256PKCS8.replacingOccurrences(of: "\n", with: "\\n"),
        "APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "DEF123GHIJ", "APNS_TOPIC": "com.mobiari.merchant",
    ]

    func failure(_ environment: [String: String]) -> PushCredentialError? {
        do { _ = try APNsCredentials.load(environment: environment); return nil } catch { return error }
    }

    @Test func noneSetMeansOff() throws {
        #expect(try APNsCredentials.load(environment: [:]) == nil)
        #expect(try APNsCredentials.load(environment: ["APNS_KEY_ID": "  ", "PATH": "/bin"]) == nil)  // blank = unset
    }

    @Test func loadsFromOneLineKey() throws {
        let credentials = try #require(try APNsCredentials.load(environment: full))
        #expect(credentials.keyID == "ABC123DEFG")
        #expect(credentials.teamID == "DEF123GHIJ")
        #expect(credentials.topic == "com.mobiari.merchant")
        #expect(credentials.keySource == "APNS_KEY_P8")
    }

    @Test func loadsFromPath() throws {
        let path = NSTemporaryDirectory() + "pushbridge-\(UUID().uuidString).p8"
        try TestKeys.ecP256PKCS8.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var environment = full
        environment["APNS_KEY_P8"] = nil
        environment["APNS_KEY_PATH"] = path
        let credentials = try #require(try APNsCredentials.load(environment: environment))
        #expect(credentials.keySource == "APNS_KEY_PATH=\(path)")
        #expect(credentials.signer.publicKeyPEM() == (try ES256Signer(pem: TestKeys.ecP256PKCS8)).publicKeyPEM())
    }

    @Test func partialConfigurationNamesTheMissingVariables() {
        #expect(failure(["APNS_KEY_ID": "ABC123DEFG"]) == .missingVariables(["APNS_KEY_P8 (or APNS_KEY_PATH)", "APNS_TEAM_ID", "APNS_TOPIC"]))
        var noTopic = full
        noTopic["APNS_TOPIC"] = ""
        #expect(failure(noTopic) == .missingVariables(["APNS_TOPIC"]))
        #expect(failure(noTopic)?.message == "missing APNS_TOPIC")
    }

    @Test func bothKeyVariablesConflict() {
        var both = full
        both["APNS_KEY_PATH"] = "/etc/key.p8"
        #expect(failure(both) == .conflictingVariables("APNS_KEY_P8", "APNS_KEY_PATH"))
    }

    @Test func badKeysNameTheVariable() {
        var garbage = full
        garbage["APNS_KEY_P8"] = "not a key"
        #expect(failure(garbage) == .unreadableKey(variable: "APNS_KEY_P8", reason: "no -----BEGIN PRIVATE KEY----- block"))
        var rsa = full
        rsa["APNS_KEY_P8"] = TestKeys.rsa2048
        #expect(failure(rsa) == .wrongKeyType(variable: "APNS_KEY_P8", expected: "an EC P-256 private key (PKCS#8 .p8)", found: "RSA 2048 bits"))
        var missingFile = full
        missingFile["APNS_KEY_P8"] = nil
        missingFile["APNS_KEY_PATH"] = "/nonexistent/AuthKey.p8"
        #expect(failure(missingFile) == .unreadableFile(variable: "APNS_KEY_PATH", path: "/nonexistent/AuthKey.p8", reason: "No such file or directory"))
        #expect(failure(missingFile)?.message == "APNS_KEY_PATH: cannot read /nonexistent/AuthKey.p8: No such file or directory")
    }

    @Test func descriptionsNeverShowTheKey() throws {
        let credentials = try #require(try APNsCredentials.load(environment: full))
        let body = TestKeys.ecP256PKCS8.split(separator: "\n")[1]
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in [credentials.description, credentials.debugDescription, String(describing: credentials),
                     String(reflecting: credentials), "\(credentials)", dumped] {
            #expect(!text.contains(body))
            #expect(!text.contains("PRIVATE KEY"))
        }
        #expect(credentials.description == "APNsCredentials(key_id: ABC123DEFG, team_id: DEF123GHIJ, topic: com.mobiari.merchant, key: APNS_KEY_P8)")
    }
}
