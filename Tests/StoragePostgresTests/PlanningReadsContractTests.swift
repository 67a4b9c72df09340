import Foundation
import HeraldCore
import Testing

/// NO-5's planning read: the devices of a batch's users with their users' languages, the same on
/// every adapter (a push falls back to the user's language from a device locale the texts lack).
@Suite struct PlanningReadsContractTests {
    @Test(arguments: Engine.available)
    func planningReadsCarryEveryDeviceOwnersLanguage(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                _ = try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns",
                                                               token: "t1", locale: "fr"), sessionExpiresAt: nil, newID: "d1", now: 100)
                _ = try tx.devices.register(DeviceRegistration(userID: "u2", sessionID: "s2", platform: "ios", provider: "apns",
                                                               token: "t2"), sessionExpiresAt: nil, newID: "d2", now: 100)
                _ = try tx.users.put(UserProfile(userID: "u1", locale: "de", updatedAt: 1))
                _ = try tx.users.put(UserProfile(userID: "u2", locale: "pt-BR", updatedAt: 1))
                _ = try tx.users.put(UserProfile(userID: "u3", locale: "es", updatedAt: 1))
            }
            let reads = try storage.readSync { tx in
                try tx.devices.planningReads(app: "default", userIDs: ["u1", "u2", "u3"], scope: nil, now: 200)
            }
            let read = try #require(reads)
            // A device with a locale of its own still brings its user's (NO-5); a user without a device none.
            #expect(read.userLocales == ["u1": "de", "u2": "pt-BR"])
            #expect(read.devices.map(\.id) == ["d1", "d2"])
        }
    }
}
