import Foundation
import HeraldCore

/// `DeliveryRepository` on PostgreSQL (NO-8).
struct PostgresDeliveryRepository: DeliveryRepository {
    let connection: PostgresConnection

    func record(_ entry: DeliveryEntry) throws(StorageError) -> Int64 {
        try mapped {
            guard let row = try connection.queryOne("""
                INSERT INTO deliveries (notification_id, user_id, device_id, connection_id, session_id, outcome,
                                        provider_message_id, job_id, delivery_id, detail, at)
                VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::bigint, $9::text, $10::text, $11::bigint)
                RETURNING id
                """, [entry.notificationID, entry.userID, entry.deviceID, entry.connectionID, entry.sessionID, entry.outcome.rawValue,
                      entry.providerMessageID, entry.jobID, entry.deliveryID, entry.detail, entry.at]) else {
                throw PostgresError.misuse(message: "INSERT … RETURNING gave no row")
            }
            return try row.value("id")
        }
    }

    func list(notificationID: String) throws(StorageError) -> [DeliveryEntry] {
        try mapped { try connection.query("SELECT * FROM deliveries WHERE notification_id = $1::text ORDER BY id", [notificationID]).map(DeliveryEntry.init(row:)) }
    }

    func queued(deliveryID: String) throws(StorageError) -> DeliveryEntry? {
        try mapped {
            try connection.queryOne("SELECT * FROM deliveries WHERE delivery_id = $1::text AND outcome = 'queued' ORDER BY id LIMIT 1", [deliveryID])
                .map(DeliveryEntry.init(row:))
        }
    }

    func exists(deliveryID: String, outcome: DeliveryOutcome) throws(StorageError) -> Bool {
        try mapped {
            try connection.queryOne("SELECT EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = $1::text AND outcome = $2::text) AS e",
                                    [deliveryID, outcome.rawValue])?.value("e") ?? false
        }
    }
}

extension DeliveryEntry {
    init(row: PostgresRow) throws {
        let rawOutcome: String = try row.value("outcome")
        guard let outcome = DeliveryOutcome(rawValue: rawOutcome) else {
            throw PostgresError.decode(column: "outcome", expected: "DeliveryOutcome", found: rawOutcome)
        }
        self.init(id: try row.value("id"), notificationID: try row.value("notification_id"), userID: try row.value("user_id"),
                  deviceID: try row.nullable("device_id"), connectionID: try row.nullable("connection_id"),
                  sessionID: try row.nullable("session_id"), outcome: outcome, providerMessageID: try row.nullable("provider_message_id"),
                  jobID: try row.nullable("job_id"), deliveryID: try row.nullable("delivery_id"), detail: try row.nullable("detail"),
                  at: try row.value("at"))
    }
}

/// `IdempotencyRepository` on PostgreSQL (NO-1), across nodes: in a write unit, `find` first
/// takes a transaction-scoped advisory lock on the key, so a second node's call with the same key
/// waits for the first one's unit of work to commit and then finds its record, instead of both
/// finding nothing and both running.
struct PostgresIdempotencyRepository: IdempotencyRepository {
    let connection: PostgresConnection
    let readOnly: Bool

    func find(app: String, key: String, notBefore: Int64) throws(StorageError) -> IdempotencyRecord? {
        try mapped {
            if !readOnly {
                _ = try connection.query("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 11))", [app + "\u{1F}" + key])
            }
            return try connection.queryOne("SELECT * FROM idempotency_keys WHERE app = $1::text AND key = $2::text AND created_at >= $3::bigint",
                                           [app, key, notBefore]).map(IdempotencyRecord.init(row:))
        }
    }

    func reserve(_ record: IdempotencyRecord) throws(StorageError) {
        try mapped {
            try connection.run("""
                INSERT INTO idempotency_keys (app, key, request_hash, response_json, complete, created_at)
                VALUES ($1::text, $2::text, $3::text, $4::text, $5::boolean, $6::bigint)
                ON CONFLICT (app, key) DO UPDATE SET request_hash = excluded.request_hash, response_json = excluded.response_json,
                    complete = excluded.complete, created_at = excluded.created_at
                """, [record.app, record.key, record.requestHash, record.responseJSON, record.complete, record.createdAt])
        }
    }

    func complete(app: String, key: String, responseJSON: String) throws(StorageError) {
        try mapped {
            try connection.run("UPDATE idempotency_keys SET response_json = $1::text, complete = TRUE WHERE app = $2::text AND key = $3::text",
                               [responseJSON, app, key])
        }
    }

    func purge(createdBefore cutoff: Int64) throws(StorageError) -> Int {
        try mapped { try connection.run("DELETE FROM idempotency_keys WHERE created_at < $1::bigint", [cutoff]) }
    }
}

extension IdempotencyRecord {
    init(row: PostgresRow) throws {
        self.init(app: try row.value("app"), key: try row.value("key"), requestHash: try row.value("request_hash"),
                  responseJSON: try row.value("response_json"), complete: try row.value("complete"), createdAt: try row.value("created_at"))
    }
}

/// `PreferenceRepository` on PostgreSQL (NO-4); the global switch is scope `''` as on SQLite.
struct PostgresPreferenceRepository: PreferenceRepository {
    let connection: PostgresConnection

    func find(app: String, userID: String, scope: String?) throws(StorageError) -> PushPreferenceRecord? {
        try mapped {
            try connection.queryOne("SELECT * FROM push_preferences WHERE app = $1::text AND user_id = $2::text AND scope = $3::text",
                                    [app, userID, scope ?? ""]).map(PushPreferenceRecord.init(row:))
        }
    }

    func list(app: String, userIDs: [String], scopes: [String]) throws(StorageError) -> [PushPreferenceRecord] {
        if userIDs.isEmpty { return [] }
        return try mapped {
            try connection.query("SELECT * FROM push_preferences WHERE app = $1::text AND user_id = ANY($2::text[]) AND scope = ANY($3::text[])",
                                 [app, PostgresTextArray(elements: Array(Set(userIDs))), PostgresTextArray(elements: Array(Set([""] + scopes)))])
                .map(PushPreferenceRecord.init(row:))
        }
    }

    func save(_ record: PushPreferenceRecord) throws(StorageError) {
        try mapped {
            try connection.run("""
                INSERT INTO push_preferences (app, user_id, scope, is_enabled, enabled_events_json, updated_at)
                VALUES ($1::text, $2::text, $3::text, $4::boolean, $5::text, $6::bigint)
                ON CONFLICT (app, user_id, scope) DO UPDATE SET is_enabled = excluded.is_enabled,
                    enabled_events_json = excluded.enabled_events_json, updated_at = excluded.updated_at
                """, [record.app, record.userID, record.scope ?? "", record.isEnabled,
                      try record.enabledEvents.map(StringArrayJSON.encode), record.updatedAt])
        }
    }
}

extension PushPreferenceRecord {
    init(row: PostgresRow) throws {
        let scope: String = try row.value("scope")
        let events: String? = try row.nullable("enabled_events_json")
        self.init(app: try row.value("app"), userID: try row.value("user_id"), scope: scope.isEmpty ? nil : scope,
                  isEnabled: try row.value("is_enabled"),
                  enabledEvents: try events.map { try StringArrayJSON.decode($0, column: "enabled_events_json") },
                  updatedAt: try row.value("updated_at"))
    }
}

/// `MemberRepository` on PostgreSQL (NO-6).
struct PostgresMemberRepository: MemberRepository {
    let connection: PostgresConnection

    func put(_ member: ScopeMember) throws(StorageError) -> Bool {
        try mapped {
            // One upsert, atomic across nodes; `xmax = 0` holds for a row this statement inserted.
            let permissions = try StringArrayJSON.encode(Array(Set(member.permissions)).sorted())
            return try connection.queryOne("""
                INSERT INTO scope_members (app, scope, user_id, permissions_json, updated_at)
                VALUES ($1::text, $2::text, $3::text, $4::text, $5::bigint)
                ON CONFLICT (app, scope, user_id) DO UPDATE SET permissions_json = excluded.permissions_json, updated_at = excluded.updated_at
                RETURNING (xmax = 0) AS created
                """, [member.app, member.scope, member.userID, permissions, member.updatedAt])?.value("created") ?? false
        }
    }

    func delete(app: String, scope: String, userID: String) throws(StorageError) -> Bool {
        try mapped {
            try connection.run("DELETE FROM scope_members WHERE app = $1::text AND scope = $2::text AND user_id = $3::text", [app, scope, userID]) > 0
        }
    }

    func find(app: String, scope: String, userID: String) throws(StorageError) -> ScopeMember? {
        try mapped {
            try connection.queryOne("SELECT * FROM scope_members WHERE app = $1::text AND scope = $2::text AND user_id = $3::text",
                                    [app, scope, userID]).map(ScopeMember.init(row:))
        }
    }

    func list(app: String, scope: String, after: String?, limit: Int) throws(StorageError) -> [ScopeMember] {
        precondition(limit >= 0, "a negative limit")
        return try mapped {
            if let after {
                return try connection.query("""
                    SELECT * FROM scope_members WHERE app = $1::text AND scope = $2::text AND user_id > $3::text
                    ORDER BY user_id LIMIT $4::bigint
                    """, [app, scope, after, limit]).map(ScopeMember.init(row:))
            }
            return try connection.query("SELECT * FROM scope_members WHERE app = $1::text AND scope = $2::text ORDER BY user_id LIMIT $3::bigint",
                                        [app, scope, limit]).map(ScopeMember.init(row:))
        }
    }

    func holding(app: String, scope: String, permission: String?) throws(StorageError) -> [ScopeMember] {
        try mapped {
            try connection.query("""
                SELECT * FROM scope_members
                WHERE app = $1::text AND scope = $2::text AND ($3::text IS NULL OR permissions_json::jsonb ? $3::text)
                ORDER BY user_id
                """, [app, scope, permission]).map(ScopeMember.init(row:))
        }
    }
}

extension ScopeMember {
    init(row: PostgresRow) throws {
        self.init(app: try row.value("app"), scope: try row.value("scope"), userID: try row.value("user_id"),
                  permissions: try StringArrayJSON.decode(try row.value("permissions_json"), column: "permissions_json"),
                  updatedAt: try row.value("updated_at"))
    }
}

/// A list of strings stored as JSON text (`permissions_json`, `enabled_events_json`).
enum StringArrayJSON {
    static func encode(_ strings: [String]) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: strings, options: [.withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// - Throws: `PostgresError.decode` when `text` is not a JSON array of strings.
    static func decode(_ text: String, column: String) throws -> [String] {
        guard let strings = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String] else {
            throw PostgresError.decode(column: column, expected: "JSON array of strings", found: text)
        }
        return strings
    }
}
