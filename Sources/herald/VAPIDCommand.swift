import Foundation
import PushWebPush

/// `herald vapid generate [--pem]`: a new VAPID key pair for Web Push (RFC 8292), printed as the
/// environment lines Herald reads. Needs no settings and touches nothing.
enum VAPIDCommand {
    static let usage = "usage: herald vapid generate [--pem]\n"

    /// - Returns: the exit status: 0, or 2 for a usage error (named on stderr), 1 when OpenSSL fails
    ///   or standard output refuses the keys.
    static func run(arguments: [String]) -> Int32 {
        guard arguments.first == "generate" else {
            Console.error("herald vapid: unknown or missing subcommand\n\(usage)")
            return 2
        }
        let options = arguments.dropFirst()
        if let unknown = options.first(where: { $0 != "--pem" }) {
            Console.error("herald vapid generate: unknown option '\(unknown)'\n\(usage)")
            return 2
        }
        let keys: GeneratedVAPIDKeys
        do {
            keys = try GeneratedVAPIDKeys.generate()
        } catch {
            Console.error("herald vapid generate: \(error)\n")
            return 1
        }
        if options.contains("--pem") {
            // The PEM alone on stdout, so `> vapid.pem` makes the file; the public key (derived
            // from the file at start anyway) goes to stderr for the operator's notes.
            Console.error("HERALD_VAPID_PUBLIC_KEY=\(keys.publicKey)\n")
            return answered(keys.pem)
        }
        return answered("HERALD_VAPID_PUBLIC_KEY=\(keys.publicKey)\nHERALD_VAPID_PRIVATE_KEY=\(keys.privateKey)\n")
    }

    /// Writes the key pair to standard output. - Returns: 0, or 1 when standard output refused it
    /// (the keys are lost: a script must not go on without them).
    private static func answered(_ text: String) -> Int32 {
        guard Console.output(text) else {
            Console.error("herald vapid generate: standard output refused the keys; nothing was kept\n")
            return 1
        }
        return 0
    }
}
