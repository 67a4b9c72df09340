import CLinux
import Foundation
import Glibc
import Synchronization

/// An object the loop calls when its descriptor is ready.
///
/// - Important: Called on the owning event loop only.
public protocol EventLoopHandler: AnyObject {
    /// - Parameter events: the `epoll_event.events` bits (`EPOLLIN`, `EPOLLOUT`, `EPOLLHUP`…).
    func handleEvents(_ events: UInt32)
}

/// One epoll loop on its own thread. It owns its descriptors, handlers and timers; nothing else
/// touches them. Other threads reach it only through `execute(_:)`: a mutex-guarded inbox plus an
/// eventfd wake-up.
///
/// # Thread safety
/// `execute`, `inEventLoop` and `stop` may be called from any thread. Every other method must be
/// called on the loop's own thread.
public final class EventLoop: @unchecked Sendable {
    /// Position of this loop in its group (0-based); shards (hub, broker counts) are indexed by it.
    public let index: Int

    private let epollFD: Int32
    private let wakeFD: Int32
    /// Protected by its own mutex: the only state written from other threads.
    private let inbox = Mutex<[@Sendable () -> Void]>([])
    /// True while the inbox may hold tasks (set and cleared under the inbox's mutex; read
    /// without it between handlers, as a hint).
    private let inboxPending = Atomic<Bool>(false)
    /// pthread of the loop, 0 until `run` starts; written once by the loop thread.
    private let threadID = Atomic<UInt>(0)
    private let stopping = Atomic<Bool>(false)

    // Protected by the loop thread.
    private var handlers: [EventLoopHandler?] = []
    private var generations: [UInt32] = []
    private var timers = TimerHeap()
    private var drained: [@Sendable () -> Void] = []
    /// Runs after each batch of work: the ready descriptors, the inbox, the due timers. Returns
    /// true when it left work for a later turn (`onTurnEnd(leavingWork:)`).
    private var turnEnd: (() -> Bool)?
    /// The last turn end left work for later: the next `epoll_wait` does not sleep, and an
    /// iteration that finds nothing else to do ends a turn anyway so that the work goes on.
    private var workLeft = false
    /// Monotonic time (ns) read at the top of each iteration; cheap "now" for handlers.
    public private(set) var now: UInt64 = monotonicNanoseconds()

    /// Creates the epoll set and the wake-up eventfd; the thread starts with `start()`.
    /// - Throws: `IOError` from `epoll_create1` or `eventfd`.
    public init(index: Int) throws(IOError) {
        self.index = index
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        if ep < 0 { throw IOError("epoll_create1", errno: errno) }
        let ev = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        if ev < 0 {
            let err = errno
            close(ep)
            throw IOError("eventfd", errno: err)
        }
        epollFD = ep
        wakeFD = ev
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = UInt64.max
        epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// True when called on this loop's thread. A fast-path hint and an assertion aid.
    public var inEventLoop: Bool {
        threadID.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Asserts (debug builds) that the caller runs on this loop.
    @inline(__always)
    public func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inEventLoop, "must be called on event loop \(index)", file: file, line: line)
    }

    /// Runs `task` on the loop thread, after the tasks already queued (FIFO per caller).
    /// Safe from any thread; never blocks on the loop.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let wasEmpty = inbox.withLock { queue -> Bool in
            queue.append(task)
            inboxPending.store(true, ordering: .relaxed)
            return queue.count == 1
        }
        if wasEmpty { wake() }
    }

    /// Starts the loop's thread.
    /// - Parameter name: the thread's name, also in `/proc/<pid>/task/*/comm` (first 15 bytes),
    ///   so per-thread CPU tells the loops apart.
    public func start(name: String) {
        let thread = Thread { [self] in
            // Foundation's `Thread.name` set before `start()` never reaches the kernel.
            _ = CLinux_setThreadName(name)
            self.run()
        }
        thread.name = name
        // Generous: only touched pages cost memory, and request decoding recurses.
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Asks the loop to return after its current iteration. Safe from any thread.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        wake()
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    // MARK: - Descriptors (loop thread only)

    /// Adds `fd` to the epoll set, reporting to `handler`.
    ///
    /// - Parameters:
    ///   - events: `EPOLL*` bits.
    ///   - edgeTriggered: adds `EPOLLET` (connections); the shared listening socket is level-
    ///     triggered with `EPOLLEXCLUSIVE` instead, so one loop wakes per new connection.
    /// - Throws: `IOError` from `epoll_ctl`.
    public func register(fd: Int32, events: UInt32, edgeTriggered: Bool = true, handler: EventLoopHandler) throws(IOError) {
        assertInEventLoop()
        let slot = Int(fd)
        if slot >= handlers.count { growSlots(toInclude: slot) }
        generations[slot] &+= 1
        handlers[slot] = handler
        var event = epoll_event()
        event.events = edgeTriggered ? events | EPOLLET.rawValue : events
        event.data.u64 = UInt64(generations[slot]) << 32 | UInt64(UInt32(bitPattern: fd))
        if epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) != 0 {
            handlers[slot] = nil
            throw IOError("epoll_ctl", errno: errno)
        }
    }

    /// Makes `handlers` and `generations` reach `slot`, by an eighth of their size (at least 256
    /// slots) and with that capacity, not more. Descriptors are numbered across the process, so
    /// each loop's tables span every descriptor while it holds only its share; grown by doubling
    /// (what `append(contentsOf:)` does), two loops with 10,000 streams held 16,384 slots of 20
    /// bytes each, 65 of an idle stream's bytes, where about 10,600 suffice (issue 17). The tables
    /// move (no copies of the handlers) about 20 times on the way to 10,000 descriptors.
    private func growSlots(toInclude slot: Int) {
        let count = max(slot + 1, handlers.count + max(handlers.count / 8, 256))
        handlers.reserveCapacity(count)
        handlers += repeatElement(nil, count: count - handlers.count)
        generations.reserveCapacity(count)
        generations += repeatElement(0, count: count - generations.count)
    }

    /// Removes `fd` from the set and forgets its handler. Call before `close(fd)`.
    public func deregister(fd: Int32) {
        assertInEventLoop()
        let slot = Int(fd)
        guard slot < handlers.count, handlers[slot] != nil else { return }
        handlers[slot] = nil
        generations[slot] &+= 1
        var event = epoll_event()
        epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    /// Sets what runs after each batch of work (the ready descriptors, the inbox, the due timers):
    /// where the server sends the writes it coalesced during the batch.
    public func onTurnEnd(_ action: @escaping () -> Void) {
        onTurnEnd(leavingWork: {
            action()
            return false
        })
    }

    /// Sets what runs after each batch of work, for work done in slices: `action` returns true
    /// when it left some for later. The loop then polls its descriptors and inbox without
    /// sleeping and calls `action` again, so what arrives meanwhile (a publish) is taken between
    /// two slices instead of after all of them (issue 17: the server's stream writes).
    public func onTurnEnd(leavingWork action: @escaping () -> Bool) {
        assertInEventLoop()
        turnEnd = action
    }

    /// Runs the turn end and notes whether it left work.
    private func endTurn() {
        workLeft = turnEnd?() ?? false
    }

    // MARK: - Timers (loop thread only)

    /// Runs `task` on this loop after `delay` nanoseconds.
    /// - Returns: an id for `cancel(timer:)`.
    @discardableResult
    public func schedule(afterNanoseconds delay: UInt64, _ task: @escaping () -> Void) -> TimerID {
        assertInEventLoop()
        return timers.insert(deadline: monotonicNanoseconds() &+ delay, task: task)
    }

    /// Runs `task` every `interval` nanoseconds until the loop stops.
    public func scheduleRepeating(everyNanoseconds interval: UInt64, _ task: @escaping () -> Void) {
        assertInEventLoop()
        schedule(afterNanoseconds: interval) { [weak self] in
            task()
            self?.scheduleRepeating(everyNanoseconds: interval, task)
        }
    }

    /// Cancels a timer that has not fired yet; a no-op otherwise.
    public func cancel(timer: TimerID) {
        assertInEventLoop()
        timers.cancel(timer)
    }

    // MARK: - The loop

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        var events = [epoll_event](repeating: epoll_event(), count: 1024)
        while !stopping.load(ordering: .relaxed) {
            now = monotonicNanoseconds()
            let timeout = workLeft ? 0 : timers.millisecondsUntilNextDeadline(now: now)
            let count = events.withUnsafeMutableBufferPointer { buffer in
                epoll_wait(epollFD, buffer.baseAddress, Int32(buffer.count), timeout)
            }
            now = monotonicNanoseconds()
            var turnEnded = false
            var handled = false
            if count > 0 {
                for i in 0..<Int(count) {
                    let event = events[i]
                    let data = event.data.u64
                    if data == UInt64.max {
                        var value: UInt64 = 0
                        _ = Glibc.read(wakeFD, &value, 8)
                        continue
                    }
                    let slot = Int(UInt32(truncatingIfNeeded: data))
                    let generation = UInt32(truncatingIfNeeded: data >> 32)
                    // A stale event for a descriptor closed (and maybe reused) earlier in this batch.
                    guard slot < handlers.count, generations[slot] == generation, let handler = handlers[slot] else { continue }
                    handler.handleEvents(event.events)
                    handled = true
                    // Tasks queued meanwhile (deliveries of the publishes this handler just took,
                    // from this loop or another) run before the next handler rather than after
                    // the whole batch: a batch of busy publisher connections would otherwise hold
                    // them back for all of its reads (issue 8, personal-channel latency). What the
                    // handler wrote (its publishes' answers) is flushed with those deliveries, in
                    // one turn end that sends streams first (`LoopContext.flushPending`): a
                    // publisher hears back once this loop has written its message, or its first
                    // slice of it (issue 17).
                    if inboxPending.load(ordering: .relaxed) {
                        _ = runInbox()
                        endTurn()
                    }
                }
                // A batch of only the inbox's wake-up ends no turn here: its tasks run first, so
                // a slice left for later goes out with what they queued.
                if handled {
                    endTurn()
                    turnEnded = true
                }
            }
            if runInbox() {
                endTurn()
                turnEnded = true
            }
            let due = monotonicNanoseconds()
            var ranTimers = false
            while let task = timers.popDue(now: due) {
                task()
                ranTimers = true
            }
            if ranTimers || (workLeft && !turnEnded) { endTurn() }
        }
        // Tasks queued together with `stop()` (shutdown notices to clients) still run.
        if runInbox() { endTurn() }
        while workLeft { endTurn() }
    }

    /// - Returns: whether any task ran.
    private func runInbox() -> Bool {
        // Swap the queue out so producers never wait while tasks run.
        inbox.withLock { queue in
            swap(&queue, &drained)
            inboxPending.store(false, ordering: .relaxed)
        }
        if drained.isEmpty { return false }
        for task in drained { task() }
        drained.removeAll(keepingCapacity: true)
        return true
    }
}
