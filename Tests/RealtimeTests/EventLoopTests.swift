import Dispatch
import CLinux
import Glibc
import Testing
@testable import Realtime

/// Records the order in which handlers, inbox tasks and turn ends ran (loop thread only).
private final class Journal: @unchecked Sendable {
    var entries: [String] = []
}

/// A pipe's read end, readable before it is registered, so every such pipe lands in one
/// `epoll_wait` batch.
private final class ReadyPipe: EventLoopHandler {
    let readFD: Int32
    let writeFD: Int32
    let onEvent: () -> Void

    init(onEvent: @escaping () -> Void) {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        readFD = fds[0]
        writeFD = fds[1]
        self.onEvent = onEvent
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    func handleEvents(_ events: UInt32) { onEvent() }
}

@Suite struct EventLoopTests {
    @Test func tasksQueuedByAHandlerRunBeforeTheNextHandlerOfTheSameBatch() throws {
        let loop = try EventLoop(index: 0)
        loop.start(name: "loop-test")
        defer { loop.stop() }
        let journal = Journal()
        let done = DispatchSemaphore(value: 0)
        let pipes = SharedBox<[ReadyPipe]>([])
        loop.execute {
            loop.onTurnEnd { journal.entries.append("turn end") }
            var handled = 0
            let made = (0..<2).map { _ in
                ReadyPipe {
                    handled += 1
                    journal.entries.append("handler \(handled)")
                    if handled == 1 {
                        loop.execute { journal.entries.append("task") }
                    } else {
                        done.signal()
                    }
                }
            }
            for pipe in made { try? loop.register(fd: pipe.readFD, events: EPOLLIN.rawValue, handler: pipe) }
            pipes.value = made
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        let entries = DispatchSemaphore(value: 0)
        let seen = SharedBox<[String]>([])
        loop.execute {
            seen.value = journal.entries
            entries.signal()
        }
        entries.wait()
        // The task the first handler queued ran between the two handlers, and one turn end
        // followed both (where coalesced writes go out: the task's deliveries to streams before
        // the handler's answers, issue 17), before the second handler.
        let order = seen.value
        let first = try #require(order.firstIndex(of: "handler 1"))
        #expect(Array(order[first...].prefix(4)) == ["handler 1", "task", "turn end", "handler 2"])
    }
}

@Suite struct EventLoopSlotTests {
    /// The loop's handler tables are indexed by descriptor and grow in steps (issue 17): a handler
    /// registered before a growth still gets its events after it, and one far past the tables'
    /// end gets its own.
    @Test func handlersRegisteredBeforeAndAfterTheTablesGrowAllGetTheirEvents() throws {
        let loop = try EventLoop(index: 0)
        loop.start(name: "loop-test")
        defer { loop.stop() }
        let seen = SharedBox<Set<Int32>>([])
        let done = DispatchSemaphore(value: 0)
        // Ready pipes whose read ends are copied to descriptors from 40, 300 and 900 on (the
        // tables start with 256 slots), registered in that order so that each later one grows
        // the tables. F_DUPFD takes the lowest free descriptor from there: no other test's closed.
        let pipes = (0..<3).map { _ in ReadyPipe {} }
        var targets: [Int32] = []
        for (pipe, lowest) in zip(pipes, [40, 300, 900] as [Int32]) {
            let target = fcntl(pipe.readFD, F_DUPFD_CLOEXEC, lowest)
            try #require(target >= lowest)
            targets.append(target)
        }
        defer { for target in targets { close(target) } }
        let handlers = targets.map { target in
            HighPipe(fd: target) {
                if seen.value.insert(target).inserted, seen.value.count == 3 { done.signal() }
            }
        }
        loop.execute {
            for handler in handlers { try? loop.register(fd: handler.fd, events: EPOLLIN.rawValue, handler: handler) }
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        let read = DispatchSemaphore(value: 0)
        let result = SharedBox<Set<Int32>>([])
        loop.execute {
            for handler in handlers { loop.deregister(fd: handler.fd) }
            result.value = seen.value
            read.signal()
        }
        read.wait()
        #expect(result.value == Set(targets))
        withExtendedLifetime(pipes) {}
    }
}

/// A handler for a descriptor the test owns; the loop thread alone calls it.
private final class HighPipe: EventLoopHandler, @unchecked Sendable {
    let fd: Int32
    let onEvent: () -> Void
    init(fd: Int32, onEvent: @escaping () -> Void) {
        self.fd = fd
        self.onEvent = onEvent
    }
    func handleEvents(_ events: UInt32) { onEvent() }
}

@Suite struct EventLoopSlicedTurnEndTests {
    /// Work done a slice per turn end (the server's stream writes, issue 17): the loop comes back
    /// for the rest without any event, and runs what was queued meanwhile between two slices.
    @Test func aTurnEndThatLeavesWorkIsCalledAgainAndTasksRunBetweenSlices() throws {
        let loop = try EventLoop(index: 0)
        loop.start(name: "loop-test")
        defer { loop.stop() }
        let journal = Journal()
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            var slices = 0
            loop.onTurnEnd(leavingWork: {
                slices += 1
                journal.entries.append("slice \(slices)")
                if slices == 1 { loop.execute { journal.entries.append("task") } }
                if slices == 3 { done.signal() }
                return slices < 3
            })
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        let seen = SharedBox<[String]>([])
        let read = DispatchSemaphore(value: 0)
        loop.execute {
            seen.value = journal.entries
            read.signal()
        }
        read.wait()
        // Slice 3 followed slice 2 with nothing queued and no descriptor ready; the task queued
        // during slice 1 ran before slice 2. The reading task's own turn end adds slice 4.
        #expect(Array(seen.value.prefix(4)) == ["slice 1", "task", "slice 2", "slice 3"])
    }
}

/// A value handed between the test thread and the loop; a semaphore orders the accesses.
private final class SharedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
