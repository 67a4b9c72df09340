/// A channel's subscriber count on each event loop. The first four loops' counts are stored
/// inline: the node keeps counts per personal channel, so per idle stream, and an array of
/// counts was a heap block of its own for each (issue 8: ≤ 2 KiB per idle SSE stream).
///
/// Guarded like the fan-out state that holds it.
struct LoopCounts {
    private static let inlineLoops = 4
    private var first: SIMD4<UInt32> = .zero
    /// Loops from `inlineLoops` on; empty until one of them has a subscriber.
    private var more: [Int] = []

    /// True when no loop has a subscriber.
    var isZero: Bool { first == .zero && more.allSatisfy { $0 == 0 } }

    /// The count on `loop` (0-based); 0 for a loop that never had one.
    subscript(loop: Int) -> Int {
        get {
            if loop < Self.inlineLoops { return Int(first[loop]) }
            let index = loop - Self.inlineLoops
            return index < more.count ? more[index] : 0
        }
        set {
            precondition(newValue >= 0, "a subscriber count cannot be negative")
            if loop < Self.inlineLoops {
                first[loop] = UInt32(newValue)
                return
            }
            let index = loop - Self.inlineLoops
            if index >= more.count { more.append(contentsOf: repeatElement(0, count: index + 1 - more.count)) }
            more[index] = newValue
        }
    }
}
