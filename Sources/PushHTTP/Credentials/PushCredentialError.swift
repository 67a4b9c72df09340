/// Why push credentials could not be loaded from the environment (SPEC PU-6).
///
/// Every case names the environment variable (or file path) at fault so the startup log tells
/// the operator what to fix, and no case ever carries key material: OpenSSL reasons and field
/// names only. A thrown error disables that one provider; the server still starts.
public enum PushCredentialError: Error, Equatable, Sendable {
    /// Some of a provider's variables are set but these required ones are missing or empty.
    case missingVariables([String])
    /// Two variables that are alternatives to each other are both set (e.g. `APNS_KEY_P8` and
    /// `APNS_KEY_PATH`); refusing is safer than guessing which one the operator meant.
    case conflictingVariables(String, String)
    /// The file named by `variable` could not be read; `reason` is the system's (e.g. "No such file or directory").
    case unreadableFile(variable: String, path: String, reason: String)
    /// The key in `variable` is not a readable private-key PEM; `reason` is OpenSSL's or ours.
    case unreadableKey(variable: String, reason: String)
    /// The key parsed but is the wrong kind, e.g. an RSA key in `APNS_KEY_P8` (APNs wants EC P-256)
    /// or a P-384 key. `found` describes what was found.
    case wrongKeyType(variable: String, expected: String, found: String)
    /// The service-account JSON in `variable` is not JSON, or lacks a field we need (`reason` names it).
    case invalidServiceAccount(variable: String, reason: String)
    /// The value of `variable` breaks its rule (`reason`), e.g. a VAPID subject that is neither
    /// `mailto:` nor `https:`, or a public key that does not match the private key.
    case invalidValue(variable: String, reason: String)

    /// One line for the startup log; never contains secrets.
    public var message: String {
        switch self {
        case .missingVariables(let names):
            "missing " + names.joined(separator: ", ")
        case .conflictingVariables(let a, let b):
            "\(a) and \(b) are both set; set only one"
        case .unreadableFile(let variable, let path, let reason):
            "\(variable): cannot read \(path): \(reason)"
        case .unreadableKey(let variable, let reason):
            "\(variable): cannot read private key: \(reason)"
        case .wrongKeyType(let variable, let expected, let found):
            "\(variable): expected \(expected), found \(found)"
        case .invalidServiceAccount(let variable, let reason):
            "\(variable): invalid service account: \(reason)"
        case .invalidValue(let variable, let reason):
            "\(variable): \(reason)"
        }
    }
}

extension PushCredentialError: CustomStringConvertible {
    public var description: String { message }
}
