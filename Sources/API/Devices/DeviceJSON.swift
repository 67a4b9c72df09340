import Foundation
import HeraldCore
import Realtime

/// The device object of the API (DV-1, DV-2).
enum DeviceJSON {
    /// - Parameters:
    ///   - callerSessionID: the calling token's `sid`, for `current`.
    ///   - maskToken: lists show a masked token; the registration answer shows it whole.
    static func encode(_ device: DeviceRecord, callerSessionID: String?, maskToken: Bool) -> String {
        func string(_ value: String?) -> String { value.map(JSONText.quote) ?? "null" }
        let token = maskToken ? DeviceToken.masked(device.token) : device.token
        return "{\"id\":\(JSONText.quote(device.id)),\"platform\":\(JSONText.quote(device.platform)),"
            + "\"provider\":\(JSONText.quote(device.provider)),\"token\":\(JSONText.quote(token)),"
            + "\"environment\":\(string(device.environment)),\"locale\":\(string(device.locale)),"
            + "\"app_version\":\(string(device.appVersion)),\"device_name\":\(string(device.deviceName)),"
            + "\"installation_id\":\(string(device.installationID)),"
            + "\"created_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: device.createdAt))),"
            + "\"last_seen_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: device.lastSeenAt))),"
            + "\"current\":\(device.sessionID != nil && device.sessionID == callerSessionID),\"active\":\(device.sessionActive)}"
    }
}

/// RFC 3339 timestamps for API answers.
enum Timestamp {
    /// `2026-11-29T19:44:07.123Z`.
    static func iso8601(milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            .formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
