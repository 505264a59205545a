import XCTest

@testable import WebSocketTransport

final class InboundBacklogTests: XCTestCase {
    func testPausesAtTheMessageBoundAndResumesAtHalf() {
        var backlog = InboundBacklog(maxMessages: 4, maxBytes: nil)
        XCTAssertEqual((0..<3).map { _ in backlog.deliver(size: 10) }, [false, false, false])
        XCTAssertTrue(backlog.deliver(size: 10), "the fourth reaches the bound")
        XCTAssertTrue(backlog.isFull)
        XCTAssertEqual(backlog.consume()?.resumes, false, "3 left: still above half")
        XCTAssertEqual(backlog.consume()?.resumes, true, "2 left: half, read again")
        XCTAssertEqual(backlog.consume()?.resumes, false, "already resumed")
        XCTAssertEqual(backlog.consume()?.resumes, false)
        XCTAssertNil(backlog.consume(), "nothing left to consume")
    }

    func testPausesAtTheByteBoundAndCountsTheOldestMessageFirst() {
        var backlog = InboundBacklog(maxMessages: nil, maxBytes: 100)
        XCTAssertFalse(backlog.deliver(size: 60))
        XCTAssertTrue(backlog.deliver(size: 50), "110 bytes")
        XCTAssertEqual(backlog.bytes, 110)
        XCTAssertEqual(backlog.consume()?.size, 60)
        XCTAssertFalse(backlog.isFull, "the 60-byte message went first: 50 bytes is half")
    }

    func testEitherBoundPauses() {
        var backlog = InboundBacklog(maxMessages: 100, maxBytes: 1_000)
        XCTAssertTrue(backlog.deliver(size: 5_000), "one message past the byte bound")
        XCTAssertEqual(backlog.consume()?.resumes, true)
        var unbounded = InboundBacklog(maxMessages: nil, maxBytes: nil)
        XCTAssertFalse((0..<10_000).contains { _ in unbounded.deliver(size: 1 << 20) })
    }

    /// Paused because the memory budget was over, a connection is read again only once its backlog is empty, even
    /// below half of its bounds.
    func testABudgetPauseLastsUntilTheBacklogIsEmpty() {
        var backlog = InboundBacklog(maxMessages: 100, maxBytes: nil)
        XCTAssertFalse(backlog.deliver(size: 10))
        XCTAssertFalse(backlog.deliver(size: 10))
        XCTAssertTrue(backlog.deliver(size: 10, overBudget: true))
        XCTAssertEqual(backlog.consume()?.resumes, false)
        XCTAssertEqual(backlog.consume()?.resumes, false)
        XCTAssertEqual(backlog.consume()?.resumes, true, "empty")
        XCTAssertFalse(backlog.deliver(size: 10), "the budget is no longer over")
    }
}
