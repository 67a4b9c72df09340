import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import API
@testable import Realtime

/// A `Storage` whose probe writes answer from a script (success when it runs out), counting them.
private final class ScriptedProbeStorage: Storage {
    let pushRotations = PushJobRotation.Count()
    private let state = Mutex<(script: [StorageError?], probes: Int)>(([], 0))

    func script(_ answers: StorageError?...) { state.withLock { $0.script += answers } }
    var probes: Int { state.withLock { $0.probes } }

    func probeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let answer = state.withLock { state -> StorageError? in
            state.probes += 1
            return state.script.isEmpty ? nil : state.script.removeFirst()
        }
        completion(answer.map { .failure($0) } ?? .success(()))
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        completion(.failure(StorageError.unavailable(message: "not in this test")))
    }
    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                           completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        completion(.failure(StorageError.unavailable(message: "not in this test")))
    }
    func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        throw StorageError.unavailable(message: "not in this test")
    }
    func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        throw StorageError.unavailable(message: "not in this test")
    }
}

/// RL-2 at the API: storage failures answer by meaning on every route, `/readyz`'s write check
/// names the reason and is cached, and a notification stored but not planned is a 202.
@Suite struct StorageFaultResponseTests {
    private func error(of response: HTTPResponse) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return object?["error"] as? String
    }

    @Test(arguments: [
        (StorageError.diskFull(message: "database or disk is full"), 507, "storage_full"),
        (.readOnly(message: "attempt to write a readonly database"), 503, "storage_read_only"),
        (.busy(message: "database is locked"), 503, "storage_busy"),
        (.unavailable(message: "disk I/O error"), 503, "storage_unavailable"),
        (.closed, 503, "storage_unavailable"),
        (.corrupt(message: "malformed"), 500, "internal_error"),
    ])
    func storageErrorsAnswerByMeaning(_ failure: StorageError, _ status: Int, _ code: String) {
        let response = DatabaseResponder.response(.failure(failure))
        #expect(response.status == status)
        #expect(error(of: response) == code)
        // The notification route answers a failed store the same way.
        let notification = NotificationRoutes.response(.failed(failure))
        #expect(notification.status == status && error(of: notification) == code)
    }

    @Test func aStoredCallWhosePlanningWasDeferredIsA202() {
        let json = #"{"notifications":[{"id":"ntf_1","user_id":"u","event_id":null}],"push_planning":"deferred"}"#
        let first = NotificationRoutes.response(.accepted(json: json, replayed: false))
        #expect(first.status == 202 && String(decoding: first.body, as: UTF8.self) == json)
        #expect(first.headers["Idempotent-Replayed"] == nil)
        let repeated = NotificationRoutes.response(.accepted(json: json, replayed: true))
        #expect(repeated.status == 202 && repeated.headers["Idempotent-Replayed"] == "true")
    }

    @Test func theProbeNamesTheReasonAndIsCachedForASecond() {
        let storage = ScriptedProbeStorage()
        let clock = ManualClock()
        let probe = StorageProbe(storage: storage, clock: clock, maxAgeMilliseconds: 1_000)
        let seen = Mutex<[StorageProbe.Health]>([])
        func check() { probe.check { health in seen.withLock { $0.append(health) } } }

        storage.script(.diskFull(message: "database or disk is full"))
        check()
        clock.advance(byMilliseconds: 999)
        check()   // the cached answer: no second write
        #expect(storage.probes == 1)
        clock.advance(byMilliseconds: 1)
        check()   // a new write: space is back
        #expect(storage.probes == 2)
        let answers = seen.withLock { $0 }
        #expect(answers.map(\.name) == ["full", "full", "ok"])
        storage.script(.readOnly(message: "ro"), .busy(message: "locked"))
        clock.advance(byMilliseconds: 1_000)
        check()
        clock.advance(byMilliseconds: 1_000)
        check()
        #expect(seen.withLock { $0 }.suffix(2).map(\.name) == ["read_only", "busy"])
    }
}
