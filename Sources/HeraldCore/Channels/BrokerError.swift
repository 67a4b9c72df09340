/// Why a broker call failed. The memory broker never fails; a remote one (Redis) does when its
/// store cannot be reached in time. Publish routes answer 503 `broker_unavailable` for any case.
public enum BrokerError: Error, Equatable, Sendable {
    /// The broker's store cannot be reached (connection refused or lost); the text says which.
    case unavailable(String)
    /// The store did not answer within the adapter's bound.
    case timedOut
}

extension BrokerError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .unavailable(let reason): "BrokerError.unavailable: \(reason)"
        case .timedOut: "BrokerError.timedOut"
        }
    }
}
