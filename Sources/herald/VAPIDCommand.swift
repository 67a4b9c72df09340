import Foundation
import PushWebPush

/// `herald vapid generate [--pem]`: a new VAPID key pair for Web Push (RFC 8292), printed as the
/// environment lines Herald reads. Needs no settings and touches nothing.
enum VAPIDCommand {
    static let usage = "usage: herald vapid generate [--pem]\n"

    /// - Returns: the exit status: 0, or 2 for a usage error (named on stderr), 1 when OpenSSL fails.
    static func run(arguments: [String]) -> Int32 {
        guard arguments.first == "generate" else {
            FileHandle.standardError.write(Data("herald vapid: unknown or missing subcommand\n\(usage)".utf8))
            return 2
        }
        let options = arguments.dropFirst()
        if let unknown = options.first(where: { $0 != "--pem" }) {
            FileHandle.standardError.write(Data("herald vapid generate: unknown option '\(unknown)'\n\(usage)".utf8))
            return 2
        }
        let keys: GeneratedVAPIDKeys
        do {
            keys = try GeneratedVAPIDKeys.generate()
        } catch {
            FileHandle.standardError.write(Data("herald vapid generate: \(error)\n".utf8))
            return 1
        }
        if options.contains("--pem") {
            // The PEM alone on stdout, so `> vapid.pem` makes the file; the public key (derived
            // from the file at start anyway) goes to stderr for the operator's notes.
            FileHandle.standardError.write(Data("HERALD_VAPID_PUBLIC_KEY=\(keys.publicKey)\n".utf8))
            print(keys.pem, terminator: "")
        } else {
            print("HERALD_VAPID_PUBLIC_KEY=\(keys.publicKey)\nHERALD_VAPID_PRIVATE_KEY=\(keys.privateKey)")
        }
        return 0
    }
}
