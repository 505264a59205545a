import XCTest

@testable import TablecastServer

final class FanOutPacingTests: XCTestCase {
    func testNoWaitUpToTheHighWaterMark() {
        XCTAssertEqual(FanOutPacing.highWater(connections: 10), 4096, "the floor, with few connections")
        XCTAssertEqual(FanOutPacing.highWater(connections: 10_000), 160_000)
        XCTAssertNil(FanOutPacing(backlog: 4096, connections: 10))
        XCTAssertNil(FanOutPacing(backlog: 160_000, connections: 10_000))
        XCTAssertNotNil(FanOutPacing(backlog: 160_001, connections: 10_000))
    }

    func testAWaitLastsWhileTheBacklogShrinksAndEndsBelowHalf() throws {
        var pacing = try XCTUnwrap(FanOutPacing(backlog: 200_000, connections: 10_000))
        let step = Duration.milliseconds(1)
        for backlog in stride(from: 190_000, to: 80_000, by: -10_000) {
            XCTAssertTrue(pacing.keepWaiting(backlog: backlog, after: step), "still above half at \(backlog)")
        }
        // Writing may pause for a few milliseconds without ending the wait.
        for _ in 0..<10 { XCTAssertTrue(pacing.keepWaiting(backlog: 85_000, after: step)) }
        XCTAssertFalse(pacing.keepWaiting(backlog: 80_000, after: step), "at half the high-water mark")
    }

    /// Readers that do not read leave a backlog that does not shrink: the wait ends after the stall limit, so they
    /// cannot hold every writer back.
    func testAWaitEndsWhenTheBacklogStopsShrinking() throws {
        var pacing = try XCTUnwrap(FanOutPacing(backlog: 10_000, connections: 100))
        let step = Duration.milliseconds(10)
        XCTAssertTrue(pacing.keepWaiting(backlog: 9_000, after: step))
        for _ in 0..<4 { XCTAssertTrue(pacing.keepWaiting(backlog: 9_500, after: step)) }
        XCTAssertFalse(pacing.keepWaiting(backlog: 9_200, after: step), "no new low for 50 ms")
    }
}
