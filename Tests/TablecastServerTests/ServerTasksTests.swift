import Synchronization
import XCTest

@testable import TablecastServer

/// The server's task registry: shutdown cancels what is left and waits for every task, however it ends.
final class ServerTasksTests: XCTestCase {
    func testCancelAllEndsTimersEarlyAndWaitsForWorkInProgress() async {
        let tasks = ServerTasks()
        let ended = Mutex<[String]>([])
        // A timer that would wait an hour, and work that finishes whatever happens.
        tasks.spawn {
            let slept = (try? await Task.sleep(for: .seconds(3600))) != nil
            ended.withLock { $0.append(slept ? "timer fired" : "timer cancelled") }
        }
        tasks.spawn {
            for _ in 0..<5 { await Task.yield() }
            ended.withLock { $0.append("work done") }
        }
        let start = ContinuousClock.now
        await tasks.cancelAll()
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5), "the timer did not hold shutdown")
        XCTAssertEqual(Set(ended.withLock { $0 }), ["timer cancelled", "work done"])
        XCTAssertEqual(tasks.count, 0)
    }

    func testATaskSpawnedWhileShuttingDownIsCancelledAndAwaited() async {
        let tasks = ServerTasks()
        let ended = Mutex<[String]>([])
        tasks.spawn {
            try? await Task.sleep(for: .seconds(3600))
            // Ending, it starts another: shutdown waits for that one too.
            tasks.spawn {
                let slept = (try? await Task.sleep(for: .seconds(3600))) != nil
                ended.withLock { $0.append(slept ? "late timer fired" : "late timer cancelled") }
            }
        }
        await tasks.cancelAll()
        XCTAssertEqual(ended.withLock { $0 }, ["late timer cancelled"])
        XCTAssertEqual(tasks.count, 0)
    }

    func testFinishedTasksAreLetGo() async throws {
        let tasks = ServerTasks()
        for _ in 0..<100 { tasks.spawn {} }
        let deadline = ContinuousClock.now + .seconds(5)
        while tasks.count > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        XCTAssertEqual(tasks.count, 0)
    }
}
