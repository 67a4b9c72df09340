import Digests
import Foundation

/// The computations of the WebSocket opening handshake (RFC 6455 §4.2) that
/// don't depend on the HTTP layer.
public enum WebSocketHandshake {
    /// The GUID that RFC 6455 §1.3 and §4.2.2 append to the client's key; it
    /// proves the server speaks WebSocket rather than merely echoing headers.
    public static let magicGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The `Sec-WebSocket-Accept` value for a client's `Sec-WebSocket-Key`
    /// (RFC 6455 §4.2.2 item 5.4): base64(SHA-1(key + GUID)).
    ///
    /// The key is used exactly as received (the HTTP layer has already
    /// stripped surrounding whitespace), not base64-decoded: §4.2.2 hashes the
    /// string form. SHA-1 is OpenSSL's (`Digests`), base64 Foundation's (RFC 4648 §4, with
    /// padding).
    public static func acceptValue(forKey key: String) -> String {
        Data(SHA1.hash(Array((key + magicGUID).utf8))).base64EncodedString()
    }

    /// Whether `key` is a well-formed `Sec-WebSocket-Key`: the base64 encoding
    /// of exactly 16 bytes (RFC 6455 §4.2.1 item 5), i.e. 22 base64 characters
    /// followed by "==".
    ///
    /// Unused low bits in the last data character are not required to be zero:
    /// the key is only a nonce whose string form gets hashed, and common
    /// decoders (e.g. Python's) accept such keys, so clients may send them.
    public static func isValidKey(_ key: String) -> Bool {
        var count = 0
        for byte in key.utf8 {
            switch count {
            case 0..<22:
                guard isBase64Alphabet(byte) else { return false }
            case 22, 23:
                guard byte == UInt8(ascii: "=") else { return false }
            default:
                return false
            }
            count += 1
        }
        return count == 24
    }

    private static func isBase64Alphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "+"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }
}
