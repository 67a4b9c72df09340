/// A reserved `idempotency_key` of `POST /v1/notifications` (NO-1) and the answer it gave.
public struct IdempotencyRecord: Sendable, Equatable {
    public var app: String
    public var key: String
    /// A hash of the request body: a repeat with another body is a different request under the
    /// same key, and is refused rather than answered.
    public var requestHash: String
    /// The answer to repeat, JSON; a placeholder until `complete` is true.
    public var responseJSON: String
    /// False while the first request is still being handled.
    public var complete: Bool
    /// Unix ms; the key expires some time after.
    public var createdAt: Int64

    public init(app: String = "default", key: String, requestHash: String, responseJSON: String, complete: Bool, createdAt: Int64) {
        self.app = app
        self.key = key
        self.requestHash = requestHash
        self.responseJSON = responseJSON
        self.complete = complete
        self.createdAt = createdAt
    }
}
