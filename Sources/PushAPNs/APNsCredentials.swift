import HeraldCore
import PushHTTP

/// APNs token-auth credentials from the seed-000 environment variables (SPEC PU-6).
///
/// | variable | meaning |
/// |---|---|
/// | `APNS_KEY_P8` | the `.p8` PEM text (one line with `\n` escapes allowed) |
/// | `APNS_KEY_PATH` | alternative: path of the `.p8` file |
/// | `APNS_KEY_ID` | the key's 10-character id (JWT header `kid`) |
/// | `APNS_TEAM_ID` | the Apple developer team id (JWT claim `iss`) |
/// | `APNS_TOPIC` | the app's bundle id (`apns-topic`) |
///
/// `description` and `debugDescription` show ids and the topic, never the key.
public struct APNsCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The 10-character key id, sent as JWT header `kid`.
    public let keyID: String
    /// The team id, sent as JWT claim `iss`.
    public let teamID: String
    /// The bundle id, sent as `apns-topic`.
    public let topic: String
    /// Signs provider tokens with the `.p8` key.
    public let signer: ES256Signer
    /// Where the key came from, for logs: `APNS_KEY_P8` or `APNS_KEY_PATH=<path>`.
    public let keySource: String

    public init(keyID: String, teamID: String, topic: String, signer: ES256Signer, keySource: String) {
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.signer = signer
        self.keySource = keySource
    }

    /// Reads APNs credentials from `environment`.
    ///
    /// - Parameter environment: the process environment (or a test dictionary). Blank values count as unset.
    /// - Returns: `nil` when none of the five variables is set (APNs is simply off).
    /// - Throws: `PushCredentialError` naming the variable: `.missingVariables` when only some are
    ///   set, `.conflictingVariables` when both key variables are set, `.unreadableFile`,
    ///   `.unreadableKey` or `.wrongKeyType` when the key does not load.
    public static func load(environment: [String: String]) throws(PushCredentialError) -> APNsCredentials? {
        let inline = EnvironmentReading.value("APNS_KEY_P8", in: environment)
        let path = EnvironmentReading.value("APNS_KEY_PATH", in: environment)
        let keyID = EnvironmentReading.value("APNS_KEY_ID", in: environment)
        let teamID = EnvironmentReading.value("APNS_TEAM_ID", in: environment)
        let topic = EnvironmentReading.value("APNS_TOPIC", in: environment)
        if inline == nil, path == nil, keyID == nil, teamID == nil, topic == nil { return nil }
        if inline != nil, path != nil { throw .conflictingVariables("APNS_KEY_P8", "APNS_KEY_PATH") }

        var missing: [String] = []
        if inline == nil, path == nil { missing.append("APNS_KEY_P8 (or APNS_KEY_PATH)") }
        if keyID == nil { missing.append("APNS_KEY_ID") }
        if teamID == nil { missing.append("APNS_TEAM_ID") }
        if topic == nil { missing.append("APNS_TOPIC") }
        guard missing.isEmpty, let keyID, let teamID, let topic else { throw .missingVariables(missing) }

        let signer: ES256Signer
        let keySource: String
        if let inline {
            keySource = "APNS_KEY_P8"
            signer = try ES256Signer(pem: inline, source: keySource)
        } else {
            let path = path!
            keySource = "APNS_KEY_PATH=\(path)"
            signer = try ES256Signer(pem: EnvironmentReading.readFile(path, variable: "APNS_KEY_PATH"), source: keySource)
        }
        return APNsCredentials(keyID: keyID, teamID: teamID, topic: topic, signer: signer, keySource: keySource)
    }

    public var description: String {
        "APNsCredentials(key_id: \(keyID), team_id: \(teamID), topic: \(topic), key: \(keySource))"
    }

    public var debugDescription: String { description }
}
