@testable import API
import HeraldCore
import Testing

/// The ended sessions kept in memory (DV-4): keyed by app and sid (ADR 0019), and only sids a
/// token may carry, so the set's canonical-equivalence comparison never disagrees with storage.
@Suite struct SessionRegistryTests {
    @Test func anEndedSessionIsItsAppsOnly() {
        let registry = SessionRegistry(ended: [SessionKey(app: "chat", sid: "17")])
        #expect(registry.isEnded("17", app: AppID("chat")!))
        #expect(!registry.isEnded("17", app: .default))
        registry.markEnded("17", app: .default)
        #expect(registry.isEnded("17", app: .default))
        #expect(!registry.isEnded("18", app: AppID("chat")!))
    }

    /// A stored ended `cafe` + U+0301 (no token may carry it since ADR 0019) must not refuse the
    /// live session `café` spelled with U+00E9, which Swift's `==` finds equal to it.
    @Test func aStoredSidNotInNFCDoesNotEndItsNFCSpelling() {
        let nfd = "cafe\u{301}", nfc = "caf\u{E9}"
        #expect(nfd == nfc, "the equivalence the filter exists for")
        let registry = SessionRegistry(ended: [SessionKey(app: "default", sid: nfd), SessionKey(app: "default", sid: "ok")])
        #expect(!registry.isEnded(nfc, app: .default))
        #expect(registry.isEnded("ok", app: .default))
        registry.markEnded(nfc, app: .default)
        #expect(registry.isEnded(nfc, app: .default))
    }
}
