import Foundation
import HeraldCore
import Testing
@testable import API

/// What one idempotency key compares (NO-1): the request's meaning, not the clock it arrived by.
@Suite struct NotificationRequestTests {
    private func request(_ json: String, now: Int64) throws -> NotificationRequest {
        let body = try JSONDecoder().decode(NotificationBody.self, from: Data(json.utf8))
        return try NotificationRequest(body: body, now: now, catalog: .empty, maxLiveDataBytes: 4096)
    }

    @Test("a relative ttl_seconds retried seconds later is the same call; its expiry still moves with the clock")
    func relativeTTLIsTimeless() throws {
        let json = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","ttl_seconds":3600,"idempotency_key":"ttl-1"}"#
        let first = try request(json, now: 1_767_225_600_000)
        let retried = try request(json, now: 1_767_225_601_500)
        #expect(first.canonicalText == retried.canonicalText)
        #expect(first.plan.expiresAt != retried.plan.expiresAt)
    }

    @Test("an absolute expires_at, or a different ttl, is a different call")
    func differentMeaningDiffers() throws {
        let base = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","ttl_seconds":3600}"#
        let other = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","ttl_seconds":60}"#
        #expect(try request(base, now: 1_000).canonicalText != request(other, now: 1_000).canonicalText)
        let users = #"{"recipients":{"user_ids":["u2"]},"kind":"k","title":"t","ttl_seconds":3600}"#
        #expect(try request(base, now: 1_000).canonicalText != request(users, now: 1_000).canonicalText)
    }
}
