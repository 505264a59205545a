import XCTest

@testable import WebSocketTransport

final class InboundBacklogTests: XCTestCase {
    func testPausesAtTheMessageBoundAndResumesAtHalf() {
        var backlog = InboundBacklog(maxMessages: 4, maxBytes: nil)
        XCTAssertEqual((0..<3).map { _ in backlog.deliver(size: 10) }, [false, false, false])
        XCTAssertTrue(backlog.deliver(size: 10), "the fourth reaches the bound")
        XCTAssertTrue(backlog.isFull)
        XCTAssertFalse(backlog.consume(), "3 left: still above half")
        XCTAssertTrue(backlog.consume(), "2 left: half, read again")
        XCTAssertFalse(backlog.consume(), "already resumed")
        XCTAssertFalse(backlog.consume())
        XCTAssertFalse(backlog.consume(), "nothing left to consume")
    }

    func testPausesAtTheByteBoundAndCountsTheOldestMessageFirst() {
        var backlog = InboundBacklog(maxMessages: nil, maxBytes: 100)
        XCTAssertFalse(backlog.deliver(size: 60))
        XCTAssertTrue(backlog.deliver(size: 50), "110 bytes")
        XCTAssertTrue(backlog.consume(), "the 60-byte message went first: 50 bytes is half")
        XCTAssertFalse(backlog.isFull)
    }

    func testEitherBoundPauses() {
        var backlog = InboundBacklog(maxMessages: 100, maxBytes: 1_000)
        XCTAssertTrue(backlog.deliver(size: 5_000), "one message past the byte bound")
        XCTAssertTrue(backlog.consume())
        var unbounded = InboundBacklog(maxMessages: nil, maxBytes: nil)
        XCTAssertFalse((0..<10_000).contains { _ in unbounded.deliver(size: 1 << 20) })
    }
}
