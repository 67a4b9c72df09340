import FuzzSupport
import HeraldCore

/// The stream cursor (`Last-Event-ID`, `?last_event_id=`), shared by `StreamCursorFuzzTests` and
/// `scripts/fuzz stream-cursor`: a text parses only if it is exactly what Herald writes for the
/// cursor it parses to (RT-8b: anything Herald could not have issued is a `reset`), and every
/// cursor Herald writes parses back to itself.
enum StreamCursorFuzzOracle {
    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        let text = String(decoding: input, as: UTF8.self)
        if let cursor = StreamCursor(text) {
            guard cursor.description == text else { return ("\(text.debugDescription) parses to \(cursor), which Herald writes differently", false) }
        }
        var rng = FuzzRandom(hashing: input)
        let issued = StreamCursor(epoch: UInt32.random(in: 0...UInt32.max, using: &rng),
                                  sequence: [0, 1, UInt64.max, UInt64.random(in: 0...UInt64.max, using: &rng)].randomElement(using: &rng)!)
        guard StreamCursor(issued.description) == issued else { return ("\(issued) does not parse back", false) }
        return (nil, StreamCursor(text) != nil)
    }
}
