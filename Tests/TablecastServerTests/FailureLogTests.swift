import Logging
import XCTest

@testable import TablecastServer

/// A failure repeated by every request (clients retrying every 0.2 s through an outage) is logged once per cause
/// per interval, with a count; another cause has lines of its own; a cause that stops is closed.
final class FailureLogTests: XCTestCase {
    func testRepeatsAreCountedOncePerIntervalAndPerCause() async throws {
        let recorder = LogRecorder()
        let failures = FailureLog(
            logger: Logger(label: "test") { _ in recorder }, interval: .milliseconds(300), tasks: ServerTasks())
        for _ in 0..<57 { failures.log(.critical, "could not reload", cause: "unreachable", metadata: [:]) }
        failures.log(.critical, "could not reload", cause: "full", metadata: [:])
        XCTAssertEqual(recorder.messages, ["could not reload", "could not reload"])
        try await waitUntil { recorder.messages.count == 3 }
        XCTAssertEqual(recorder.messages.last, "could not reload (repeated 56 times in 0 s)")
        // Quiet for an interval: the cause is closed, and the next occurrence is logged at once.
        try await Task.sleep(for: .milliseconds(700))
        XCTAssertEqual(recorder.messages.count, 3)
        failures.log(.critical, "could not reload", cause: "unreachable", metadata: [:])
        XCTAssertEqual(recorder.messages.count, 4)
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else { return XCTFail("not within 5 s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
