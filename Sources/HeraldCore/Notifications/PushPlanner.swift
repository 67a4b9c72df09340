
/// Decides, for one device of one recipient, whether a notification is pushed, and why not
/// when it is not (NO-2). A pure function of what the Notifier gathered, so every rule is tested
/// without a server; the order of the checks is the order the issue gives.
package struct PushPlanner: Sendable {
    /// What happens to one device.
    package enum Decision: Equatable, Sendable {
        /// Recorded, no push: the outcome and a short reason.
        case skip(DeliveryOutcome, String)
        /// One `push.deliver` job, due at `runAt` (unix ms); `ackEventID` set for `unless_acked`.
        case enqueue(runAt: Int64, ackEventID: String?)
    }

    package let catalog: NotificationCatalog

    /// - Parameters:
    ///   - device: the recipient's device, with `sessionActive`.
    ///   - eventID: the live event's id on `user:{id}` (nil when it could not be broadcast).
    ///   - receipts: the recipient's live connections and what they received (presence).
    ///   - allowedByPreferences: NO-4 for this recipient, kind and scope.
    ///   - providerEnabled: the device's provider has credentials (PU-6).
    ///   - now: unix ms.
    package func decide(_ plan: NotificationPlan, device: DeviceRecord, eventID: String?, receipts: [Presence.Receipt],
                allowedByPreferences: Bool, providerEnabled: Bool, now: Int64) -> Decision {
        guard device.sessionActive else { return .skip(.skippedSession, "session ended or expired") }
        if let expiresAt = plan.expiresAt, expiresAt <= now, plan.ttlSeconds != 0 { return .skip(.expired, "expired before it was planned") }
        if let reason = catalog.exclusions.reason(kind: plan.kind, audience: plan.audience, data: plan.data) {
            return .skip(.skippedAudience, reason)
        }
        guard allowedByPreferences else { return .skip(.skippedPreferences, "turned off in the user's push preferences") }
        switch plan.policy {
        case .never:
            return .skip(.skippedPolicy, "push policy never")
        case .auto:
            if let sessionID = device.sessionID,
               receipts.contains(where: { $0.sessionID == sessionID && $0.received && $0.foreground }) {
                return .skip(.suppressedForeground, "a foreground connection of the session received the live event")
            }
        case .always, .unlessAcked:
            break
        }
        guard providerEnabled else { return .skip(.failed, "push_not_configured: \(device.provider) has no credentials") }
        if plan.policy == .unlessAcked, let eventID {
            return .enqueue(runAt: now + Int64(plan.ackWindowMilliseconds), ackEventID: eventID)
        }
        return .enqueue(runAt: now, ackEventID: nil)
    }

    /// NO-4: may `kind` be pushed to this user in `scope`? The global switch silences everything;
    /// a saved scope (or, without a scope, global) event list decides for the kinds it can name;
    /// otherwise the catalog's `default_enabled` (a kind the catalog does not know is on).
    package func allows(kind: String, scope: String?, global: PushPreferenceRecord?, scoped: PushPreferenceRecord?) -> Bool {
        if let global, !global.isEnabled { return false }
        let saved = scope == nil ? global : scoped
        if let saved {
            guard saved.isEnabled else { return false }
            // A saved list speaks only for kinds it could name: with a catalog, a kind outside it
            // cannot be listed (PUT refuses it), and one without preferences (`"preferences":
            // false`) is never offered in `available_events`, so the list turns neither off (a
            // GET's body PUT back must not change what is pushed).
            if let events = saved.enabledEvents, catalog.kinds.isEmpty || catalog.kind(kind)?.inPreferences == true {
                return events.contains(kind)
            }
        }
        return catalog.kind(kind)?.defaultEnabled ?? true
    }
}
