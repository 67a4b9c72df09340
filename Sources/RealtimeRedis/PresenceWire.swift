import Foundation
import HeraldCore

/// What one node tells the others about its presence, as JSON on `{namespace}:presence` (and,
/// for the full form, in `{namespace}:presence:<node>`, so a node that starts learns the others
/// without waiting for their next full set). A message with nothing in it is a heartbeat.
struct PresenceWire: Codable, Equatable {
    /// One connection of the sending node.
    struct Connection: Codable, Equatable {
        var id: String
        var user: String
        var session: String?
        /// `sse` / `websocket`.
        var transport: String
        /// `foreground` / `background`.
        var state: String
        var channels: [String]
        /// Wall-clock ms of opening.
        var opened: Int64
        /// Age of its last app-level life when sent, ms (an age, not a time: nodes' clocks differ).
        var lifeAge: Int64
        /// Newest personal-channel sequence written to it.
        var personal: UInt64
    }

    /// Acks of a session, applied by every node to its own store (`hasAcknowledged`, leases).
    struct Ack: Codable, Equatable {
        var user: String
        var session: String?
        var connection: String?
        var ids: [String]
    }

    /// `PUT /v1/me/sessions/current/state` taken by the sending node, for the session's
    /// connections on the others.
    struct SessionState: Codable, Equatable {
        var user: String
        var session: String
        var state: String
    }

    var node: String
    /// `connections` is the node's complete set (a heartbeat); otherwise changes only.
    var full: Bool
    var connections: [Connection] = []
    var removed: [String] = []
    var acks: [Ack] = []
    var states: [SessionState] = []

    var isEmpty: Bool { !full && connections.isEmpty && removed.isEmpty && acks.isEmpty && states.isEmpty }

    func encoded() -> [UInt8] {
        (try? Array(JSONEncoder().encode(self))) ?? []
    }

    init(node: String, full: Bool) {
        self.node = node
        self.full = full
    }

    /// - Returns: nil for bytes that are not a wire message.
    init?(_ bytes: [UInt8]) {
        guard let decoded = try? JSONDecoder().decode(PresenceWire.self, from: Data(bytes)) else { return nil }
        self = decoded
    }
}
