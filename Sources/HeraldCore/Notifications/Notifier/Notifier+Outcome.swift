import Foundation
import Synchronization

extension Notifier {
    /// What `send` answers.
    struct Outcome: Sendable {
        var notifications: [(id: String, userID: String, eventID: String?)] = []
        var liveDelivered = 0, pushQueued = 0, pushSuppressed = 0, skipped = 0
        var skippedRecipients: [(userID: String, reason: String)] = []
        /// Of `pushQueued`, the jobs inserted `queued` for a claim (the others were leased to this
        /// node's worker at insert, ADR 0007): what the push backlog counts. Not in the body.
        var queuedForClaim = 0
        /// Stored, pushes not planned yet: recovery plans them (the 202's `push_planning`).
        var planningDeferred = false

        /// The 201 body (and an idempotent replay's), grown as bytes (`JSONWriter`): it is made
        /// for every call.
        var json: String {
            var out = JSONWriter(capacity: 160 + notifications.count * 96)
            out.raw("{\"notifications\":[")
            for (index, n) in notifications.enumerated() {
                if index == 0 { out.raw("{\"id\":") } else { out.raw(",{\"id\":") }
                out.quoted(n.id)
                out.raw(",\"user_id\":")
                out.quoted(n.userID)
                out.raw(",\"event_id\":")
                out.quotedOrNull(n.eventID)
                out.raw("}")
            }
            out.raw("],\"live_delivered\":")
            out.number(liveDelivered)
            out.raw(",\"push_queued\":")
            out.number(pushQueued)
            out.raw(",\"push_suppressed\":")
            out.number(pushSuppressed)
            out.raw(",\"skipped\":")
            out.number(skipped)
            out.raw(",\"skipped_recipients\":[")
            for (index, recipient) in skippedRecipients.enumerated() {
                if index == 0 { out.raw("{\"user_id\":") } else { out.raw(",{\"user_id\":") }
                out.quoted(recipient.userID)
                out.raw(",\"reason\":")
                out.quoted(recipient.reason)
                out.raw("}")
            }
            if planningDeferred { out.raw("],\"push_planning\":\"deferred\"}") } else { out.raw("]}") }
            return out.text
        }
    }
}
