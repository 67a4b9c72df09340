import Testing
@testable import HeraldCore

@Suite struct NotificationIDTests {
    private let alphabet = Set("0123456789abcdefghjkmnpqrstvwxyz")

    @Test func idsArePrefixedBase32AndSortByTheirMillisecond() {
        let early = Notifier.newID("ntf", now: 1_764_460_800_000)
        let later = Notifier.newID("ntf", now: 1_764_460_800_001)
        let much = Notifier.newID("ntf", now: 1_900_000_000_000)
        for id in [early, later, much] {
            #expect(id.hasPrefix("ntf_") && id.count == 24)
            #expect(id.dropFirst(4).allSatisfy(alphabet.contains))
        }
        #expect(early < later && later < much)
        // The time is the first 9 characters; the random rest differs between ids of one millisecond.
        #expect(early.prefix(13) == Notifier.newID("ntf", now: 1_764_460_800_000).prefix(13))
        let sameMillisecond = Set((0..<1_000).map { _ in Notifier.newID("dlv", now: 5) })
        #expect(sameMillisecond.count == 1_000)
    }

    /// The check the notification insert makes of its id (`idCarriesTime`), on ids of every shape.
    @Test func anIDCarriesTheTimeOnlyOfItsOwnPrefixMillisecondAndLength() {
        let t: Int64 = 1_764_460_800_123
        let id = Notifier.newID("ntf", now: t)
        #expect(Notifier.idCarriesTime(id, prefix: "ntf", at: t))
        #expect(id.hasPrefix(Notifier.idTimePrefix("ntf", at: t)) && Notifier.idTimePrefix("ntf", at: t).count == 13)
        #expect(!Notifier.idCarriesTime(id, prefix: "ntf", at: t - 1))
        #expect(!Notifier.idCarriesTime(id, prefix: "dlv", at: t))
        #expect(!Notifier.idCarriesTime(id + "x", prefix: "ntf", at: t))
        #expect(!Notifier.idCarriesTime(String(id.dropLast()), prefix: "ntf", at: t))
        #expect(!Notifier.idCarriesTime("", prefix: "ntf", at: t))
        #expect(!Notifier.idCarriesTime(id, prefix: "ntf", at: 1 << 45))
        // A long prefix (beyond any small buffer) and an empty one.
        let long = String(repeating: "p", count: 300)
        #expect(Notifier.idCarriesTime(Notifier.newID(long, now: t), prefix: long, at: t))
        #expect(Notifier.newID(long, now: t).utf8.count == 300 + 21)
        #expect(Notifier.idCarriesTime(Notifier.newID("", now: 0), prefix: "", at: 0))
    }
}
