/// A message every node of a cluster must act on (SC-1): sent once, received by every node,
/// the sender included.
public enum ControlMessage: Sendable, Equatable {
    /// App `app`'s session ended (`DELETE /v1/sessions/{sid}`, DV-4): every node refuses its
    /// tokens from now on and closes its live streams (that app's only, ADR 0006).
    case sessionEnded(sessionID: String, app: String)
    /// An app's settings or credentials changed: every node drops what it cached of them and
    /// reads them again. `appID` names the app as the settings store does.
    case appSettingsChanged(appID: String)
    /// Node `node` reloaded app `appID` after an `appSettingsChanged`: the node that made the
    /// change answers its admin call once every node that received it said so, so the change is
    /// served everywhere from the answer on (a secret it retires is refused at once).
    case appSettingsApplied(appID: String, node: String)
}

/// Carries `ControlMessage`s to every node (SC-1, issue 16). One process needs none: the
/// executable wires a bus only with `HERALD_BROKER=redis://…`; in one process the node acts
/// directly.
///
/// # Delivery
/// At most once per node, in the order sent by one node; a node cut off from the bus while a
/// message went by does not receive it. Handlers must be idempotent (a session ended twice is
/// still ended).
///
/// # Thread safety
/// `send` may be called from any thread and waits a bounded time; handlers run on the bus's
/// thread and must only hand the work on.
public protocol ControlBus: Sendable {
    /// Sends `message` to every node, this one included.
    /// - Throws: `BrokerError` when the bus cannot be reached in time; unless the error
    ///   `mayHaveTakenEffect`, nothing was sent then.
    func send(_ message: ControlMessage) throws(BrokerError)

    /// Adds a handler called for every message received (several may be added).
    func onMessage(_ handler: @escaping @Sendable (ControlMessage) -> Void)
    /// Adds a handler called each time the bus listens again after losing its connection:
    /// messages sent meanwhile were not received, and sends that failed meanwhile may now pass,
    /// so what they carried is read again from storage (several may be added).
    func onReconnected(_ handler: @escaping @Sendable () -> Void)
}
