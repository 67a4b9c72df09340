import Testing

@testable import HeraldCore

@Suite struct MassDeletionGuardTests {
    @Test func scatteredDeadTokensAreDeleted() {
        let guardian = MassDeletionGuard(limits: .init(window: 20, threshold: 0.5))
        for i in 0..<100 {
            if i % 10 == 0 {
                #expect(guardian.allowDeletion(provider: "apns", reason: "Unregistered"))
            } else {
                guardian.recordOther(provider: "apns", delivered: true)
            }
        }
        #expect(guardian.trippedReason(provider: "apns") == nil)
    }

    @Test func aWallOfIdenticalRejectionsTripsAndADeliveryResets() {
        let guardian = MassDeletionGuard(limits: .init(window: 20, threshold: 0.5))
        var allowed = 0
        for _ in 0..<30 where guardian.allowDeletion(provider: "apns", reason: "DeviceTokenNotForTopic") { allowed += 1 }
        // Issue 18: was 9 (the guard waited for 10 of the window); now the default burst of 3.
        #expect(allowed == 3, "deletions stop after the burst once the same rejection is most answers")
        #expect(guardian.trippedReason(provider: "apns") == "DeviceTokenNotForTopic")
        #expect(guardian.trippedReason(provider: "fcm") == nil, "per provider")
        #expect(guardian.allowDeletion(provider: "fcm", reason: "UNREGISTERED"))
        guardian.recordOther(provider: "apns", delivered: false)
        #expect(guardian.trippedReason(provider: "apns") != nil, "a retry is not a success")
        guardian.recordOther(provider: "apns", delivered: true)
        #expect(guardian.trippedReason(provider: "apns") == nil)
    }
}
