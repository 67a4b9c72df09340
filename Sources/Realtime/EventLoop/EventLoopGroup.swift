/// The fixed set of event loops (`HERALD_LOOPS`, default one per core).
public final class EventLoopGroup: Sendable {
    /// The loops, indexed by `EventLoop.index`.
    public let loops: [EventLoop]

    /// - Parameter count: number of loops, at least 1.
    /// - Throws: `IOError` when a loop's epoll set or eventfd cannot be created.
    public init(count: Int) throws(IOError) {
        precondition(count >= 1, "an event loop group needs at least one loop")
        var loops: [EventLoop] = []
        for index in 0..<count { loops.append(try EventLoop(index: index)) }
        self.loops = loops
    }

    /// Starts every loop's thread.
    public func start() {
        for loop in loops { loop.start(name: "herald-loop-\(loop.index)") }
    }

    /// Stops every loop after its current iteration.
    public func stop() {
        for loop in loops { loop.stop() }
    }
}
