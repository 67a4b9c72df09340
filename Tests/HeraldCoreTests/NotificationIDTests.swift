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
}
