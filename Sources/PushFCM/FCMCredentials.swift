import Foundation
import HeraldCore
import PushHTTP

/// FCM HTTP v1 credentials: a Google service account and the Firebase project to send to
/// (SPEC PU-2, PU-6; push-providers.md §2.4).
///
/// | variable | meaning |
/// |---|---|
/// | `FCM_SERVICE_ACCOUNT_JSON` | the service-account JSON, minified on one line |
/// | `FCM_SERVICE_ACCOUNT_PATH` | alternative: path of the JSON file |
/// | `FCM_PROJECT_ID` | the Firebase project id; default: the account's `project_id` |
///
/// `description` and `debugDescription` show the project, account e-mail and token URI, never
/// the private key.
public struct FCMCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The project in `POST /v1/projects/{projectID}/messages:send`.
    public let projectID: String
    /// The account's `client_email`: the `iss` of the OAuth2 assertion.
    public let clientEmail: String
    /// The account's `token_uri`, where the assertion is exchanged (and its `aud`).
    /// Current files say `https://oauth2.googleapis.com/token`; tests point it at a local double.
    public let tokenURI: String
    /// The account's `private_key_id`, sent as the assertion's `kid` when present (as google-auth does).
    public let privateKeyID: String?
    /// Signs assertions with the account's `private_key`.
    public let signer: RS256Signer

    /// Google's token endpoint, used when a service account has no `token_uri`.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    public init(projectID: String, clientEmail: String, tokenURI: String, privateKeyID: String?, signer: RS256Signer) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
        self.privateKeyID = privateKeyID
        self.signer = signer
    }

    /// Reads FCM credentials from `environment`.
    ///
    /// - Parameter environment: the process environment (or a test dictionary). Blank values count as unset.
    /// - Returns: `nil` when none of the three variables is set (FCM is simply off).
    /// - Throws: `PushCredentialError` naming the variable: `.missingVariables` (only
    ///   `FCM_PROJECT_ID` set, or no project id anywhere), `.conflictingVariables`,
    ///   `.unreadableFile`, `.invalidServiceAccount` (not JSON, no `client_email`/`private_key`),
    ///   `.unreadableKey` or `.wrongKeyType` for the key inside.
    public static func load(environment: [String: String]) throws(PushCredentialError) -> FCMCredentials? {
        let inline = EnvironmentReading.value("FCM_SERVICE_ACCOUNT_JSON", in: environment)
        let path = EnvironmentReading.value("FCM_SERVICE_ACCOUNT_PATH", in: environment)
        let projectOverride = EnvironmentReading.value("FCM_PROJECT_ID", in: environment)
        if inline == nil, path == nil, projectOverride == nil { return nil }
        if inline != nil, path != nil { throw .conflictingVariables("FCM_SERVICE_ACCOUNT_JSON", "FCM_SERVICE_ACCOUNT_PATH") }

        let variable: String
        let json: String
        if let inline {
            variable = "FCM_SERVICE_ACCOUNT_JSON"
            json = inline
        } else if let path {
            variable = "FCM_SERVICE_ACCOUNT_PATH"
            json = try EnvironmentReading.readFile(path, variable: variable)
        } else {
            throw .missingVariables(["FCM_SERVICE_ACCOUNT_JSON (or FCM_SERVICE_ACCOUNT_PATH)"])
        }
        let account = try ServiceAccountFile.parse(json, variable: variable)
        guard let projectID = projectOverride ?? account.projectID else {
            throw .missingVariables(["FCM_PROJECT_ID (the service account has no project_id)"])
        }
        let signer = try RS256Signer(pem: account.privateKey, source: variable)
        return FCMCredentials(projectID: projectID, clientEmail: account.clientEmail, tokenURI: account.tokenURI,
                              privateKeyID: account.privateKeyID, signer: signer)
    }

    public var description: String {
        "FCMCredentials(project_id: \(projectID), client_email: \(clientEmail), token_uri: \(tokenURI))"
    }

    public var debugDescription: String { description }
}

/// The fields of a Google service-account key file that the JWT grant needs.
///
/// Holds the private key text only while loading; `FCMCredentials` keeps the parsed key, not the text.
struct ServiceAccountFile {
    let projectID: String?
    let clientEmail: String
    let privateKey: String
    let privateKeyID: String?
    let tokenURI: String

    private struct Raw: Decodable {
        let type: String?
        let project_id: String?
        let private_key_id: String?
        let private_key: String?
        let client_email: String?
        let token_uri: String?
    }

    /// Parses the JSON text of a service-account key file.
    ///
    /// - Throws: `.invalidServiceAccount` naming the missing field. Decoder messages are not passed
    ///   on: they may quote parts of the text, and the text holds the private key.
    static func parse(_ json: String, variable: String) throws(PushCredentialError) -> ServiceAccountFile {
        let raw: Raw
        do {
            raw = try JSONDecoder().decode(Raw.self, from: Data(json.utf8))
        } catch {
            throw .invalidServiceAccount(variable: variable, reason: "not a JSON object with string fields")
        }
        if let type = raw.type, type != "service_account" {
            throw .invalidServiceAccount(variable: variable, reason: "type is \"\(type)\", expected \"service_account\"")
        }
        func field(_ value: String?) -> String? {
            guard let value = value?.trimmingWhitespace(), !value.isEmpty else { return nil }
            return value
        }
        guard let clientEmail = field(raw.client_email) else {
            throw .invalidServiceAccount(variable: variable, reason: "no client_email")
        }
        guard let privateKey = field(raw.private_key) else {
            throw .invalidServiceAccount(variable: variable, reason: "no private_key")
        }
        return ServiceAccountFile(projectID: field(raw.project_id), clientEmail: clientEmail, privateKey: privateKey,
                                  privateKeyID: field(raw.private_key_id), tokenURI: field(raw.token_uri) ?? FCMCredentials.defaultTokenURI)
    }
}
