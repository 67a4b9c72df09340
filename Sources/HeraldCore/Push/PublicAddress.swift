/// An IPv4 or IPv6 address, and the range of the address space it falls in: what decides whether a
/// push endpoint a client gave (Web Push) may be reached. Herald only sends such pushes to the
/// public internet, so a client cannot make it POST to the host's own services, the cloud
/// metadata service or the private network behind it (a blind SSRF; docs/api.md "Devices").
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 bytes (IPv6), network order.
    public let bytes: [UInt8]

    /// - Parameter bytes: 4 (IPv4) or 16 (IPv6) bytes in network order; any other count gives nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses a numeric address in its standard text: IPv4 dotted decimal (`192.0.2.1`, four
    /// parts, no leading zeros) or IPv6 (RFC 4291 §2.2, `::` and a trailing dotted IPv4 allowed,
    /// no brackets, no zone id). Nil for anything else.
    public init?(_ text: String) {
        if text.contains(":") {
            guard let bytes = Self.parseIPv6(Substring(text)) else { return nil }
            self.bytes = bytes
        } else {
            guard let bytes = Self.parseDottedQuad(Substring(text)) else { return nil }
            self.bytes = bytes
        }
    }

    /// Whether it is an IPv4 address (4 bytes).
    public var isIPv4: Bool { bytes.count == 4 }

    /// The range it belongs to (IANA's IPv4 and IPv6 special-purpose address registries,
    /// RFC 6890); `.global` for the rest. IPv6 forms that carry an IPv4 address (mapped
    /// `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`) take the range of
    /// that IPv4 address, since that is where a packet to them ends up.
    public var range: AddressRange {
        isIPv4 ? Self.rangeOfIPv4(bytes[0], bytes[1], bytes[2], bytes[3]) : rangeOfIPv6
    }

    /// Whether a connection to it leaves for the public internet (`range == .global`).
    public var isPublic: Bool { range == .global }

    /// Dotted decimal, or RFC 5952 text for IPv6 (lower-case, longest zero run as `::`).
    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        var groups: [UInt16] = []
        for index in stride(from: 0, to: 16, by: 2) { groups.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])) }
        var bestStart = -1, bestLength = 1, start = -1
        for index in 0...8 {
            if index < 8, groups[index] == 0 {
                if start < 0 { start = index }
            } else if start >= 0 {
                if index - start > bestLength { bestStart = start; bestLength = index - start }
                start = -1
            }
        }
        func hex(_ slice: ArraySlice<UInt16>) -> String { slice.map { String($0, radix: 16) }.joined(separator: ":") }
        guard bestStart >= 0 else { return hex(groups[...]) }
        return hex(groups[..<bestStart]) + "::" + hex(groups[(bestStart + bestLength)...])
    }

    private var rangeOfIPv6: AddressRange {
        let b = bytes
        let firstTen = b[0..<10].allSatisfy { $0 == 0 }
        if firstTen, b[10] == 0xFF, b[11] == 0xFF { return Self.rangeOfIPv4(b[12], b[13], b[14], b[15]) }   // ::ffff:0:0/96
        if firstTen, b[10] == 0, b[11] == 0 {                                                              // ::/96
            if b[12..<15].allSatisfy({ $0 == 0 }) {
                if b[15] == 0 { return .unspecified }
                if b[15] == 1 { return .loopback }
            }
            return .reserved   // IPv4-compatible (deprecated, RFC 4291 §2.5.5.1)
        }
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B {
            // 64:ff9b::/96 (RFC 6052) reaches the IPv4 address through NAT64; 64:ff9b:1::/48 is local use.
            if b[4..<12].allSatisfy({ $0 == 0 }) { return Self.rangeOfIPv4(b[12], b[13], b[14], b[15]) }
            return .privateUse
        }
        if b[0] == 0x20, b[1] == 0x02 { return Self.rangeOfIPv4(b[2], b[3], b[4], b[5]) }               // 6to4 2002::/16
        if b[0] == 0x01, b[1] == 0x00, b[2..<8].allSatisfy({ $0 == 0 }) { return .reserved }           // discard 100::/64
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return .reserved }                 // documentation 2001:db8::/32
        if b[0] == 0x20, b[1] == 0x01, b[2] & 0xFE == 0x00 { return .reserved }                        // IETF protocols 2001::/23 (Teredo…)
        if b[0] & 0xFE == 0xFC { return .uniqueLocal }                                                 // fc00::/7
        if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return .linkLocal }                                     // fe80::/10
        if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return .privateUse }                                    // site-local fec0::/10 (deprecated)
        if b[0] == 0xFF { return .multicast }                                                          // ff00::/8
        return .global
    }

    private static func rangeOfIPv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> AddressRange {
        switch (a, b, c) {
        case (0, _, _): return a == 0 && b == 0 && c == 0 && d == 0 ? .unspecified : .reserved   // 0.0.0.0/8: "this network" (Linux connects it locally)
        case (10, _, _): return .privateUse
        case (100, 64...127, _): return .sharedCGNAT
        case (127, _, _): return .loopback
        case (169, 254, _): return .linkLocal
        case (172, 16...31, _): return .privateUse
        case (192, 0, 0), (192, 0, 2), (198, 51, 100), (203, 0, 113): return .reserved   // IETF protocols, documentation
        case (192, 168, _): return .privateUse
        case (198, 18...19, _): return .reserved                                         // benchmarking
        case (224...239, _, _): return .multicast
        case (240...255, _, _): return .reserved                                         // future use and broadcast
        default: return .global
        }
    }

    static func parseDottedQuad(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  part.utf8.count == 1 || part.utf8.first != 0x30, let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.utf8.count <= 45 else { return nil }
        func groups(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseDottedQuad(piece) else { return nil }
                    result.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    result.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                    continue
                }
                guard (1...4).contains(piece.utf8.count), let value = UInt16(piece, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        var all: [UInt16]
        if let gap = text.range(of: "::") {
            guard let head = groups(text[..<gap.lowerBound]), let tail = groups(text[gap.upperBound...]),
                  !text[gap.upperBound...].contains("::"), head.count + tail.count <= 7 else { return nil }
            all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let only = groups(text), only.count == 8 else { return nil }
            all = only
        }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

/// Where an address leads (IANA special-purpose registries); everything but `.global` stays on
/// this host, its network, or nowhere.
public enum AddressRange: String, Sendable, Equatable, CaseIterable {
    /// The public internet.
    case global = "public"
    /// `0.0.0.0`, `::`: on Linux a connection to it reaches this host.
    case unspecified
    /// `127.0.0.0/8`, `::1`.
    case loopback
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), site-local `fec0::/10`, NAT64 local use.
    case privateUse = "private"
    /// RFC 6598 carrier-grade NAT, `100.64.0.0/10`.
    case sharedCGNAT = "shared (carrier-grade NAT)"
    /// `169.254.0.0/16` (cloud metadata services), `fe80::/10`.
    case linkLocal = "link-local"
    /// RFC 4193 `fc00::/7`.
    case uniqueLocal = "unique local"
    /// `224.0.0.0/4`, `ff00::/8`.
    case multicast
    /// Other special-purpose blocks: `0/8`, documentation, benchmarking, `240/4`, broadcast,
    /// `192.0.0/24`, `100::/64`, `2001::/23`, IPv4-compatible IPv6.
    case reserved
}

/// The rule for the host of an endpoint URL a client registers (Web Push): it must name the public
/// internet. Checked at registration on the URL's text; the addresses a name resolves to are
/// checked again at each connection (the libcurl client's `PushHTTPRequest.publicAddressesOnly`).
public enum PublicHostRule {
    /// Why `host` cannot be a public push service, or nil when it may be.
    ///
    /// Refused: literal addresses outside `.global` (IPv6 in brackets or not, IPv4 also in the
    /// shortened, hex and octal forms URL parsers and libcurl accept, e.g. `2130706433`,
    /// `0x7f.1`), IPv6 zone ids, a last label that is a number but no IPv4 address, names
    /// without a dot (resolved through the search domains to local hosts), and the
    /// special-use names `localhost`, `*.localhost`, `*.localdomain`, `*.local` (mDNS),
    /// `*.internal`, `*.home.arpa`, `*.test`, `*.invalid` (RFC 6761, 6762, 8375).
    ///
    /// - Parameter host: the URL's host as written (case and one trailing dot ignored).
    /// - Returns: a sentence naming the host and why, for a 400 or a dead letter.
    public static func refusal(host: String) -> String? {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.contains(":") {
            guard !name.contains("%") else { return "\(name) names an IPv6 zone (a link-local interface)" }
            guard let address = IPAddress(name) else { return "\(name) is not a valid IPv6 address" }
            return verdict(address)
        }
        if name.hasSuffix(".") { name.removeLast() }
        if let address = lenientIPv4(name) { return verdict(address) }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard let last = labels.last, !last.isEmpty else { return "\(host) is not a host name" }
        if last.utf8.allSatisfy({ (0x30...0x39).contains($0) }) || last.hasPrefix("0x") {
            return "\(host) is not a valid IPv4 address"
        }
        guard labels.count > 1 else { return "\(host) is a single-label name (a local host), not a public push service" }
        for suffix in specialUseSuffixes where name == suffix || name.hasSuffix("." + suffix) {
            return "\(host) is a special-use name (.\(suffix)), not a public push service"
        }
        return nil
    }

    private static let specialUseSuffixes = ["localhost", "localdomain", "local", "internal", "home.arpa", "test", "invalid"]

    private static func verdict(_ address: IPAddress) -> String? {
        switch address.range {
        case .global: nil
        case .unspecified: "\(address) is the unspecified address (this host)"
        case let range: "\(address) is a \(range.rawValue) address, not the public internet"
        }
    }

    /// An IPv4 address as URL parsers and libcurl read a host (WHATWG URL "IPv4 parser", curl's
    /// `ipv4_normalize`): one to four parts, each decimal, `0x` hex or `0` octal, the last one
    /// filling the remaining bytes. Nil when `host` is not that.
    public static func lenientIPv4(_ host: String) -> IPAddress? {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            let value: UInt64?
            if part.hasPrefix("0x") || part.hasPrefix("0X") {
                let digits = part.dropFirst(2)
                value = digits.isEmpty ? 0 : (digits.utf8.count <= 10 ? UInt64(digits, radix: 16) : nil)
            } else if part.hasPrefix("0"), part.utf8.count > 1 {
                value = part.utf8.count <= 13 ? UInt64(part.dropFirst(), radix: 8) : nil
            } else {
                value = part.utf8.count <= 10 && part.utf8.allSatisfy({ (0x30...0x39).contains($0) }) ? UInt64(part) : nil
            }
            guard let value else { return nil }
            values.append(value)
        }
        let last = values.removeLast()
        guard values.allSatisfy({ $0 <= 255 }), last < (UInt64(1) << (8 * UInt64(4 - values.count))) else { return nil }
        var number = last
        for (index, value) in values.enumerated() { number |= value << (8 * UInt64(3 - index)) }
        return IPAddress(bytes: [UInt8(number >> 24 & 0xFF), UInt8(number >> 16 & 0xFF), UInt8(number >> 8 & 0xFF), UInt8(number & 0xFF)])
    }
}
