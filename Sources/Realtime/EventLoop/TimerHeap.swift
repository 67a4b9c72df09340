/// Identifies a scheduled timer so it can be cancelled.
public struct TimerID: Hashable, Sendable {
    let raw: UInt64
}

/// A binary min-heap of one-shot timers ordered by deadline (monotonic ns), owned by one loop.
/// Cancelled timers are removed lazily when they reach the top.
struct TimerHeap {
    private struct Entry {
        let deadline: UInt64
        let id: UInt64
        let task: () -> Void
    }

    private var heap: [Entry] = []
    private var cancelled: Set<UInt64> = []
    private var nextID: UInt64 = 0

    var count: Int { heap.count - cancelled.count }

    mutating func insert(deadline: UInt64, task: @escaping () -> Void) -> TimerID {
        nextID &+= 1
        heap.append(Entry(deadline: deadline, id: nextID, task: task))
        siftUp(heap.count - 1)
        return TimerID(raw: nextID)
    }

    mutating func cancel(_ id: TimerID) {
        if heap.contains(where: { $0.id == id.raw }) { cancelled.insert(id.raw) }
    }

    /// The `epoll_wait` timeout: -1 (no timers), 0 (one is due) or the ms until the earliest,
    /// rounded up so the loop never wakes a hair early and spins.
    mutating func millisecondsUntilNextDeadline(now: UInt64) -> Int32 {
        dropCancelledTop()
        guard let first = heap.first else { return -1 }
        if first.deadline <= now { return 0 }
        let ms = (first.deadline - now + 999_999) / 1_000_000
        return Int32(min(ms, 60_000))
    }

    /// Removes and returns the earliest timer due at or before `now`, if any. The caller runs it
    /// outside this heap's mutation, since a task may schedule new timers.
    mutating func popDue(now: UInt64) -> (() -> Void)? {
        dropCancelledTop()
        guard let first = heap.first, first.deadline <= now else { return nil }
        removeTop()
        return first.task
    }

    private mutating func dropCancelledTop() {
        while let first = heap.first, cancelled.contains(first.id) {
            cancelled.remove(first.id)
            removeTop()
        }
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            if heap[parent].deadline <= heap[child].deadline { break }
            heap.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = parent * 2 + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
