import Synchronization

/// Push counters for `/metrics` (OP-3): provider answers by outcome, and provider request latency
/// as a histogram. Thread-safe; written from the transport's completion threads.
public final class PushMetrics: Sendable {
    /// Upper bounds of the latency buckets, seconds (Prometheus `le`).
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// One provider's latency histogram.
    public struct Histogram: Sendable {
        public var buckets: [UInt64] = Array(repeating: 0, count: PushMetrics.latencyBuckets.count)
        public var count: UInt64 = 0
        public var sum: Double = 0

        mutating func record(_ seconds: Double) {
            for (i, bound) in PushMetrics.latencyBuckets.enumerated() where seconds <= bound { buckets[i] &+= 1 }
            count &+= 1
            sum += seconds
        }
    }

    private struct Key: Hashable {
        var provider: String
        var outcome: String
    }

    private struct State {
        var outcomes: [Key: UInt64] = [:]
        var latency: [String: Histogram] = [:]   // provider
    }

    private let state = Mutex(State())

    public init() {}

    /// Records one provider answer (or transport failure) and how long it took.
    /// - Parameter seconds: nil when no request was made (nothing reached the provider): the
    ///   outcome is counted, the latency histogram left alone.
    public func record(provider: String, outcome: String, seconds: Double?) {
        state.withLock { state in
            state.outcomes[Key(provider: provider, outcome: outcome), default: 0] &+= 1
            // Mutated in place (the `default:` subscript): copying the histogram out and back
            // copied its bucket array on every push.
            if let seconds { state.latency[provider, default: Histogram()].record(seconds) }
        }
    }

    /// Answers by `(provider, outcome)`.
    public var outcomes: [(provider: String, outcome: String, count: UInt64)] {
        state.withLock { state in
            state.outcomes.map { key, count in (key.provider, key.outcome, count) }.sorted { ($0.provider, $0.outcome) < ($1.provider, $1.outcome) }
        }
    }

    /// Latency histograms by provider (cumulative buckets).
    public var latency: [(provider: String, histogram: Histogram)] {
        state.withLock { $0.latency.map { ($0.key, $0.value) }.sorted { $0.provider < $1.provider } }
    }
}

extension PushOutcome {
    /// A short label for metrics: delivered, device_deleted, retry, auth_refresh, not_sent, dead, expired.
    public var metricLabel: String {
        switch self {
        case .delivered: return "delivered"
        case .deleteDevice: return "device_deleted"
        case .retry: return "retry"
        case .refreshAuthAndRetryOnce: return "auth_refresh"
        case .notSent, .busy: return "not_sent"
        case .deadLetter: return "dead"
        case .expired: return "expired"
        }
    }
}
