import Foundation
import Synchronization

extension Notifier {
    /// What `send` answers.
    struct Outcome: Sendable {
        var notifications: [(id: String, userID: String, eventID: String?)] = []
        var liveDelivered = 0, pushQueued = 0, pushSuppressed = 0, skipped = 0
        var skippedRecipients: [(userID: String, reason: String)] = []
        /// Stored, pushes not planned yet: recovery plans them (the 202's `push_planning`).
        var planningDeferred = false

        /// The 201 body (and an idempotent replay's), grown in one string: it is made for every call.
        var json: String {
            var out = "{\"notifications\":["
            out.reserveCapacity(96 + notifications.count * 96)
            for (index, n) in notifications.enumerated() {
                out += index == 0 ? "{\"id\":" : ",{\"id\":"
                JSONText.appendQuoted(n.id, to: &out)
                out += ",\"user_id\":"
                JSONText.appendQuoted(n.userID, to: &out)
                out += ",\"event_id\":"
                if let eventID = n.eventID { JSONText.appendQuoted(eventID, to: &out) } else { out += "null" }
                out += "}"
            }
            out += "],\"live_delivered\":\(liveDelivered),\"push_queued\":\(pushQueued),\"push_suppressed\":\(pushSuppressed),"
            out += "\"skipped\":\(skipped),\"skipped_recipients\":["
            for (index, recipient) in skippedRecipients.enumerated() {
                out += index == 0 ? "{\"user_id\":" : ",{\"user_id\":"
                JSONText.appendQuoted(recipient.userID, to: &out)
                out += ",\"reason\":"
                JSONText.appendQuoted(recipient.reason, to: &out)
                out += "}"
            }
            out += planningDeferred ? "],\"push_planning\":\"deferred\"}" : "]}"
            return out
        }
    }
}
