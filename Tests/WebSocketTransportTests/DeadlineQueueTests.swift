import XCTest

@testable import WebSocketTransport

/// Deadlines a fixed span after they are set, taken out in order as time is stepped.
final class DeadlineQueueTests: XCTestCase {
    func testDeadlinesFallASpanAfterTheyAreSetAndComeOutInOrder() {
        var queue = DeadlineQueue<Int>(span: .milliseconds(2_000))
        XCTAssertEqual(queue.span, 2_000_000_000)
        XCTAssertNil(queue.popDue(at: 10_000_000_000), "nothing set")
        queue.add(1, at: 0)
        queue.add(2, at: 500_000_000)
        queue.add(3, at: 500_000_000)
        XCTAssertNil(queue.popDue(at: 1_999_999_999), "a nanosecond early")
        XCTAssertEqual(queue.popDue(at: 2_000_000_000), 1)
        XCTAssertNil(queue.popDue(at: 2_000_000_000))
        XCTAssertEqual(queue.popDue(at: 3_000_000_000), 2)
        XCTAssertEqual(queue.popDue(at: 3_000_000_000), 3)
        XCTAssertTrue(queue.isEmpty)
    }

    /// One set again when it comes out (a heartbeat) is due a span after that, behind those set before.
    func testAnIdSetAgainWhenDueGoesBehindTheOthers() {
        var queue = DeadlineQueue<String>(span: .milliseconds(200))
        queue.add("a", at: 0)
        queue.add("b", at: 100_000_000)
        XCTAssertEqual(queue.popDue(at: 250_000_000), "a")
        queue.add("a", at: 250_000_000)
        XCTAssertEqual(queue.popDue(at: 300_000_000), "b")
        XCTAssertNil(queue.popDue(at: 449_999_999))
        XCTAssertEqual(queue.popDue(at: 450_000_000), "a")
    }
}
