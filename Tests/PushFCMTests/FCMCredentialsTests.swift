import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushFCM

@Suite struct FCMCredentialsTests {
    func failure(_ environment: [String: String]) -> PushCredentialError? {
        do { _ = try FCMCredentials.load(environment: environment); return nil } catch { return error }
    }

    @Test func noneSetMeansOff() throws {
        #expect(try FCMCredentials.load(environment: ["FCM_PROJECT_ID": ""]) == nil)
    }

    @Test func projectDefaultsToTheAccountsAndTokenURIComesFromIt() throws {
        let credentials = try #require(try FCMCredentials.load(environment: ["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(tokenURI: "http://127.0.0.1:9/token")]))
        #expect(credentials.projectID == "herald-test")
        #expect(credentials.clientEmail == "pushbridge-test@herald-test.iam.gserviceaccount.com")
        #expect(credentials.tokenURI == "http://127.0.0.1:9/token")
        #expect(credentials.privateKeyID == "test-key-1")
        let overridden = try #require(try FCMCredentials.load(environment: ["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(), "FCM_PROJECT_ID": "other"]))
        #expect(overridden.projectID == "other")
        let noURI = try #require(try FCMCredentials.load(environment: ["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(tokenURI: nil)]))
        #expect(noURI.tokenURI == "https://oauth2.googleapis.com/token")
    }

    @Test func loadsFromPath() throws {
        let path = NSTemporaryDirectory() + "pushbridge-\(UUID().uuidString).json"
        try serviceAccountJSON().write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let credentials = try #require(try FCMCredentials.load(environment: ["FCM_SERVICE_ACCOUNT_PATH": path]))
        #expect(credentials.projectID == "herald-test")
    }

    @Test func partialOrBrokenConfigurationNamesTheVariable() {
        #expect(failure(["FCM_PROJECT_ID": "p"]) == .missingVariables(["FCM_SERVICE_ACCOUNT_JSON (or FCM_SERVICE_ACCOUNT_PATH)"]))
        #expect(failure(["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(projectID: nil)]) == .missingVariables(["FCM_PROJECT_ID (the service account has no project_id)"]))
        #expect(failure(["FCM_SERVICE_ACCOUNT_JSON": "{", "FCM_SERVICE_ACCOUNT_PATH": "/x"]) == .conflictingVariables("FCM_SERVICE_ACCOUNT_JSON", "FCM_SERVICE_ACCOUNT_PATH"))
        #expect(failure(["FCM_SERVICE_ACCOUNT_JSON": "{not json"]) == .invalidServiceAccount(variable: "FCM_SERVICE_ACCOUNT_JSON", reason: "not a JSON object with string fields"))
        #expect(failure(["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(clientEmail: nil)]) == .invalidServiceAccount(variable: "FCM_SERVICE_ACCOUNT_JSON", reason: "no client_email"))
        #expect(failure(["FCM_SERVICE_ACCOUNT_JSON": #"{"type":"authorized_user"}"#]) == .invalidServiceAccount(variable: "FCM_SERVICE_ACCOUNT_JSON", reason: "type is \"authorized_user\", expected \"service_account\""))
        #expect(failure(["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(privateKey: TestKeys.ecP256PKCS8)]) ==
                .wrongKeyType(variable: "FCM_SERVICE_ACCOUNT_JSON", expected: "an RSA private key of at least 2048 bits", found: "EC P-256"))
        #expect(failure(["FCM_SERVICE_ACCOUNT_PATH": "/nonexistent.json"]) == .unreadableFile(variable: "FCM_SERVICE_ACCOUNT_PATH", path: "/nonexistent.json", reason: "No such file or directory"))
    }

    @Test func descriptionsNeverShowTheKey() throws {
        let credentials = try #require(try FCMCredentials.load(environment: ["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON()]))
        let body = TestKeys.rsa2048.split(separator: "\n")[1]
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in [credentials.description, credentials.debugDescription, String(reflecting: credentials), "\(credentials)", dumped] {
            #expect(!text.contains(body))
            #expect(!text.contains("PRIVATE KEY"))
        }
        // A broken JSON that holds a key: the error must not quote it.
        let broken = serviceAccountJSON().replacingOccurrences(of: "\"type\"", with: "type")
        let message = failure(["FCM_SERVICE_ACCOUNT_JSON": broken])?.message ?? ""
        #expect(!message.contains(body) && !message.isEmpty)
    }
}
