/// Why a broker call failed. The memory broker never fails; a remote one (Redis) does when its
/// store cannot be reached in time. Publish routes answer 503 `broker_unavailable` for any case,
/// and say whether the publish may still have happened (`mayHaveTakenEffect`).
public enum BrokerError: Error, Equatable, Sendable {
    /// The broker's store cannot be reached (connection refused, backing off): the call was not
    /// run; the text says which.
    case unavailable(String)
    /// The store did not answer within the adapter's bound; the call may still run there.
    case timedOut
    /// The call may have run at the store but its answer was lost (the connection broke while it
    /// was in flight) or could not be read; the text says which.
    case unconfirmed(String)

    /// Whether the store may have run the call although it failed here: a publish that failed so
    /// may still reach subscribers, and retrying it may deliver the message twice.
    public var mayHaveTakenEffect: Bool {
        switch self {
        case .unavailable: false
        case .timedOut, .unconfirmed: true
        }
    }
}

extension BrokerError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .unavailable(let reason): "BrokerError.unavailable: \(reason)"
        case .timedOut: "BrokerError.timedOut"
        case .unconfirmed(let reason): "BrokerError.unconfirmed: \(reason)"
        }
    }
}
