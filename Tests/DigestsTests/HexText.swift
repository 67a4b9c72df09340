/// Lower-case hex of `bytes`, as the digest tests compare them (SHA1Tests, SHA256Tests).
func hexText(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16)
        return byte < 16 ? "0" + digits : digits
    }.joined()
}
