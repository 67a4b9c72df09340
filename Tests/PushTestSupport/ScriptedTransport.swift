import PushHTTP
import Synchronization

/// A `PushTransport` that answers from a script, synchronously, and records every request: provider
/// tests run their whole send → refresh → retry path without a socket.
package final class ScriptedTransport: PushTransport {
    private let state: Mutex<(answers: [PushHTTPResponse], requests: [PushHTTPRequest], retired: [PushConnectionID])>
    private let answer: @Sendable (PushHTTPRequest) -> PushHTTPResponse?

    /// - Parameters:
    ///   - answers: answers to provider requests, in order (the last one repeats).
    ///   - answer: answers a request first when it returns non-nil (e.g. an OAuth token endpoint).
    package init(_ answers: [PushHTTPResponse], answer: @escaping @Sendable (PushHTTPRequest) -> PushHTTPResponse? = { _ in nil }) {
        precondition(!answers.isEmpty, "a script needs at least one answer")
        state = Mutex((answers, [], []))
        self.answer = answer
    }

    /// Every request sent, in order.
    package var requests: [PushHTTPRequest] { state.withLock { $0.requests } }

    /// Every connection the provider retired (`retireConnection`), in order.
    package var retired: [PushConnectionID] { state.withLock { $0.retired } }

    package func retireConnection(_ connection: PushConnectionID) {
        state.withLock { $0.retired.append(connection) }
    }

    package func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
        let response: PushHTTPResponse = answer(request) ?? state.withLock { state in
            state.requests.append(request)
            return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
        }
        completion(.success(response))
    }
}
