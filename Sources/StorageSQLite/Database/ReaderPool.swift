import Synchronization

/// Hands read jobs to whichever reader connection is free, in arrival order.
///
/// Each reader is a `ConnectionWorker` (one connection, one serial queue). A job goes to an idle
/// reader at once, otherwise it waits in a FIFO; a reader that finishes a job takes the next
/// waiting one before it goes idle. So a slow query delays only the reads queued behind it while
/// every reader is busy, unlike a fixed round-robin that would queue behind it regardless.
final class ReaderPool: Sendable {
    typealias Job = @Sendable (ConnectionWorker) -> Void

    private struct State {
        /// Indices of readers with nothing to do.
        var idle: [Int]
        var waiting = FIFO<Job>()
    }

    let workers: [ConnectionWorker]
    private let state: Mutex<State>

    init(workers: [ConnectionWorker]) {
        precondition(!workers.isEmpty, "a reader pool needs at least one reader")
        self.workers = workers
        self.state = Mutex(State(idle: Array(workers.indices)))
    }

    /// Runs `job` on a free reader's queue, now or when one frees up. Never blocks.
    func submit(_ job: @escaping Job) {
        let reader: Int? = state.withLock { state in
            if let reader = state.idle.popLast() { return reader }
            state.waiting.append(job)
            return nil
        }
        if let reader { start(job, on: reader) }
    }

    private func start(_ job: @escaping Job, on reader: Int) {
        let worker = workers[reader]
        worker.queue.async {
            var next: Job? = job
            while let current = next {
                current(worker)
                next = self.state.withLock { state in
                    if let waiting = state.waiting.popFirst() { return waiting }
                    state.idle.append(reader)
                    return nil
                }
            }
        }
    }
}

/// A first-in first-out queue with O(1) amortised append and pop.
private struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    mutating func append(_ element: Element) { items.append(element) }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= items.count {
            items.removeFirst(head)  // reclaim the consumed prefix once it is most of the array
            head = 0
        }
        return element
    }
}
