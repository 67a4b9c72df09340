/// The point after which every live message published so far has been written to (or queued
/// for) each of its subscribers on this node, so presence can say who received it (NO-2; ADR 0005).
/// `RealtimeNode` answers with one barrier task per event loop; a unit test answers at once,
/// after recording which connections it lets "receive" the message.
public protocol DeliveryBarrier: Sendable {
    /// Calls `done` exactly once: when every loop has run the work queued before this call, or
    /// after `timeoutNanoseconds` (a stopped or wedged loop must not hold the planner; its
    /// connections then count as not having received the message, so their devices get a push).
    func afterPendingDeliveries(timeoutNanoseconds: UInt64, _ done: @escaping @Sendable () -> Void)
}
