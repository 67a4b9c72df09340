// The engine behind the seeded mutation loops (`*FuzzTests`) and the inputs of the libFuzzer
// harnesses (`scripts/fuzz`, docs/conformance.md "Fuzzing"): a deterministic random source, a
// byte mutator over a seed corpus, and a time- and count-bounded loop. No XCTest or Testing
// import, so `scripts/fuzz` compiles these files into its standalone harnesses unchanged.
#if canImport(Glibc)
import Glibc
#endif

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and fully determined by its seed, so a
/// failing iteration is reproduced by its seed alone.
public struct FuzzRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// Seeded from the bytes themselves (FNV-1a), so an oracle that needs random choices (chunk
    /// boundaries) makes the same ones for the same input under libFuzzer and under the loop.
    public init(hashing bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        state = hash
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Splits `bytes` into consecutive non-empty pieces of random sizes (1 to `maxPiece`), for the
/// "the outcome does not depend on how the bytes arrive" invariants of the incremental parsers.
public func fuzzChunks(_ bytes: [UInt8], maxPiece: Int, using rng: inout FuzzRandom) -> [[UInt8]] {
    var chunks: [[UInt8]] = []
    var offset = 0
    while offset < bytes.count {
        let size = Int.random(in: 1...max(1, min(maxPiece, bytes.count - offset)), using: &rng)
        chunks.append(Array(bytes[offset..<(offset + size)]))
        offset += size
    }
    return chunks
}

/// The seed inputs of one target: every file in `Tests/Fuzz/corpus/<target>/`, sorted by name
/// so the loop's mutations do not depend on directory order.
public enum FuzzCorpus {
    /// `Tests/Fuzz/corpus`, found from this file's own path (`Tests/FuzzSupport/…`).
    public static let root: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(2)
        return parts.joined(separator: "/") + "/Fuzz/corpus"
    }()

    /// - Returns: the files' bytes; empty when the directory is missing (the loop then fails).
    public static func load(_ target: String) -> [[UInt8]] {
        let directory = root + "/" + target
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted().compactMap { readFile(directory + "/" + $0) }
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes.append(contentsOf: buffer[0..<n])
        }
        return bytes
    }
}

/// libFuzzer's kinds of mutation, without its coverage feedback: bit flips, interesting bytes
/// and integers, insertion and removal, duplication of a range, truncation, splices with another
/// corpus input, and insertion of a target's dictionary tokens (field names, delimiters).
public struct FuzzMutator: Sendable {
    /// Seed inputs; mutants are made from these and from `pool`.
    public let corpus: [[UInt8]]
    /// How many seeds were given (0 when the corpus directory was missing or empty).
    public let seedCount: Int
    /// Tokens of the target's grammar, spliced in whole.
    public let dictionary: [[UInt8]]
    /// Upper bound on a mutant's size.
    public let maxLength: Int
    /// Mutants the loop chose to keep (they reached a further state), bounded.
    public private(set) var pool: [[UInt8]] = []
    static let maxPool = 256

    static let interestingBytes: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x20, 0x22, 0x2B, 0x2C, 0x2D, 0x2E, 0x30, 0x39,
                                            0x3A, 0x3B, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x7E, 0x7F, 0x80, 0xBF, 0xC0, 0xC2,
                                            0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFE, 0xFF]

    public init(corpus: [[UInt8]], dictionary: [String] = [], maxLength: Int = 4096) {
        self.corpus = corpus.isEmpty ? [[]] : corpus
        seedCount = corpus.count
        self.dictionary = dictionary.map { Array($0.utf8) }
        self.maxLength = maxLength
    }

    /// Keeps `input` as a base for later mutants (oldest dropped past the bound).
    public mutating func keep(_ input: [UInt8]) {
        if pool.count >= Self.maxPool { pool.remove(at: 0) }
        pool.append(input)
    }

    /// A mutant of a random corpus or pool input, with 1 to 4 stacked mutations.
    public func mutant(using rng: inout FuzzRandom) -> [UInt8] {
        let usePool = !pool.isEmpty && Bool.random(using: &rng)
        var bytes = usePool ? pool.randomElement(using: &rng)! : corpus.randomElement(using: &rng)!
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            mutate(&bytes, using: &rng)
        }
        if bytes.count > maxLength { bytes.removeSubrange(maxLength...) }
        return bytes
    }

    private func mutate(_ bytes: inout [UInt8], using rng: inout FuzzRandom) {
        func index(_ inclusiveEnd: Bool = false) -> Int {
            Int.random(in: 0...(inclusiveEnd ? bytes.count : max(0, bytes.count - 1)), using: &rng)
        }
        switch Int.random(in: 0..<11, using: &rng) {
        case 0 where !bytes.isEmpty:  // bit flip
            bytes[index()] ^= 1 << UInt8.random(in: 0...7, using: &rng)
        case 1 where !bytes.isEmpty:  // interesting byte
            bytes[index()] = Self.interestingBytes.randomElement(using: &rng)!
        case 2 where !bytes.isEmpty:  // random byte
            bytes[index()] = UInt8.random(in: 0...255, using: &rng)
        case 3:  // insert interesting bytes
            let run = (0..<Int.random(in: 1...4, using: &rng)).map { _ in Self.interestingBytes.randomElement(using: &rng)! }
            bytes.insert(contentsOf: run, at: index(true))
        case 4 where !bytes.isEmpty:  // erase a range
            let start = index()
            let end = min(bytes.count, start + Int.random(in: 1...16, using: &rng))
            bytes.removeSubrange(start..<end)
        case 5 where !bytes.isEmpty:  // duplicate a range
            let start = index()
            let end = min(bytes.count, start + Int.random(in: 1...32, using: &rng))
            let copies = Int.random(in: 1...8, using: &rng)
            let piece = Array(bytes[start..<end])
            bytes.insert(contentsOf: Array(repeating: piece, count: copies).joined(), at: end)
        case 6 where !bytes.isEmpty:  // truncate
            bytes.removeSubrange(index()...)
        case 7:  // splice with another input
            let other = corpus.randomElement(using: &rng)!
            guard !other.isEmpty else { return }
            let from = Int.random(in: 0..<other.count, using: &rng)
            let to = Int.random(in: from...other.count, using: &rng)
            let at = index(true)
            if Bool.random(using: &rng) {
                bytes = Array(bytes[..<at]) + other[from...]
            } else {
                bytes.insert(contentsOf: other[from..<to], at: at)
            }
        case 8 where !dictionary.isEmpty:  // dictionary token
            let token = dictionary.randomElement(using: &rng)!
            if Bool.random(using: &rng) || bytes.count < token.count {
                bytes.insert(contentsOf: token, at: index(true))
            } else {
                let at = Int.random(in: 0...(bytes.count - token.count), using: &rng)
                bytes.replaceSubrange(at..<(at + token.count), with: token)
            }
        case 9 where !bytes.isEmpty:  // interesting integer (a digit string or a big-endian word)
            let values: [UInt64] = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x10000, 0x7FFF_FFFF, 0xFFFF_FFFF,
                                    1 << 53, UInt64(Int64.max), UInt64.max]
            let value = values.randomElement(using: &rng)!
            if Bool.random(using: &rng) {
                bytes.insert(contentsOf: Array(String(value).utf8), at: index(true))
            } else {
                let width = [2, 4, 8].randomElement(using: &rng)!
                let word = (0..<width).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (width - 1 - $0))) }
                let at = index()
                bytes.replaceSubrange(at..<min(bytes.count, at + width), with: word)
            }
        default:  // swap two bytes
            guard bytes.count > 1 else { return }
            let a = index(), b = index()
            bytes.swapAt(a, b)
        }
    }
}

/// What one bounded run did.
public struct FuzzReport: Sendable, CustomStringConvertible {
    public var target: String
    public var seed: UInt64
    /// Seed inputs the run started from.
    public var seeds = 0
    public var executions = 0
    public var kept = 0
    public var slowestMicroseconds = 0
    /// The first invariant violated: its message and the input, in hex.
    public var failure: (message: String, input: [UInt8], iteration: Int)?

    public var description: String {
        var text = "\(target): \(executions) executions from \(seeds) seeds, seed \(seed), \(kept) kept, slowest input \(slowestMicroseconds) µs"
        if let failure {
            let hex = failure.input.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
            text += "\nFAILED at iteration \(failure.iteration): \(failure.message)\ninput (\(failure.input.count) bytes, hex): \(hex)"
        }
        return text
    }
}

/// The seeded loop: every corpus input first, then mutants, until `seconds` or `maxExecutions`
/// is reached. `check` returns nil when the invariants hold, or a message; true in `.kept`
/// (the second element) asks for the input to be kept as a base for later mutants.
///
/// Budget: `HERALD_FUZZ_SECONDS` (default `seconds`) and `HERALD_FUZZ_SEED` override the
/// arguments, so `HERALD_FUZZ_SECONDS=120 swift test --filter FuzzTests` is a longer run of the
/// same loops. An input slower than `hangMilliseconds` is reported as a hang.
public func runFuzzLoop(
    target: String, seed: UInt64 = 0x4865_7261_6C64, seconds: Double = 2, maxExecutions: Int = 1_000_000,
    hangMilliseconds: Int = 2000, mutator: FuzzMutator, check: ([UInt8]) -> (failure: String?, keep: Bool)
) -> FuzzReport {
    let environment = { (name: String) -> String? in getenv(name).map { String(cString: $0) } }
    let seconds = environment("HERALD_FUZZ_SECONDS").flatMap(Double.init) ?? seconds
    let seed = environment("HERALD_FUZZ_SEED").flatMap { UInt64($0) } ?? seed
    var mutator = mutator
    var rng = FuzzRandom(seed: seed)
    var report = FuzzReport(target: target, seed: seed, seeds: mutator.seedCount)
    let start = monotonicMicroseconds()
    let deadline = start + Int(seconds * 1_000_000)
    var iteration = 0
    while iteration < maxExecutions {
        let input = iteration < mutator.corpus.count ? mutator.corpus[iteration] : mutator.mutant(using: &rng)
        let before = monotonicMicroseconds()
        let (failure, keep) = check(input)
        let after = monotonicMicroseconds()
        report.executions += 1
        report.slowestMicroseconds = max(report.slowestMicroseconds, after - before)
        if let failure {
            report.failure = (failure, input, iteration)
            return report
        }
        if after - before > hangMilliseconds * 1000 {
            report.failure = ("took \((after - before) / 1000) ms (over \(hangMilliseconds) ms: a hang)", input, iteration)
            return report
        }
        if keep {
            mutator.keep(input)
            report.kept += 1
        }
        iteration += 1
        if after >= deadline, iteration >= mutator.corpus.count { break }
    }
    return report
}

func monotonicMicroseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec * 1_000_000 + now.tv_nsec / 1000
}
