import WebSocketTransport
import XCTest

@testable import TablecastServer

/// The history readers' scheduling, stepped by hand: costs, pacing and one reply at a time.
final class HistoryReadQueueTests: XCTestCase {
    let flooder = WebSocketConnectionID(rawValue: 1)
    let other = WebSocketConnectionID(rawValue: 2)
    let probe = WebSocketConnectionID(rawValue: 3)

    func testTheCheapestPayerGoesFirstWhateverArrivedBefore() {
        var queue = HistoryReadQueue<String>()
        queue.add("flood 1", table: "big", connection: flooder, principal: "")
        XCTAssertEqual(queue.next(now: 0)?.request, "flood 1")
        queue.finished(table: "big", connection: flooder, principal: "", seconds: 0.2, now: 0.2)
        queue.replyWritten(flooder)
        queue.add("flood 2", table: "big", connection: flooder, principal: "")
        queue.add("probe", table: "big", connection: probe, principal: "")
        XCTAssertEqual(queue.next(now: 0.2)?.request, "probe", "the probe has used no reader time")
        XCTAssertEqual(queue.next(now: 0.2)?.request, "flood 2")
        XCTAssertNil(queue.next(now: 0.2))
    }

    func testAConnectionWaitsForItsReplyToBeWritten() {
        var queue = HistoryReadQueue<String>()
        queue.add("a", table: "big", connection: flooder, principal: "")
        XCTAssertEqual(queue.next(now: 0)?.request, "a")
        queue.add("b", table: "big", connection: flooder, principal: "")
        queue.finished(table: "big", connection: flooder, principal: "", seconds: 0.001, now: 0.001)
        XCTAssertNil(queue.next(now: 1), "the reply to 'a' is not written yet")
        queue.replyWritten(flooder)
        XCTAssertEqual(queue.next(now: 1)?.request, "b")
    }

    func testAnExpensiveConnectionIsPacedUntilItsCostDecays() throws {
        var queue = HistoryReadQueue<String>()
        queue.add("a", table: "big", connection: flooder, principal: "")
        _ = queue.next(now: 0)
        // 2 s of reader time, over the limit of 0.5 s.
        queue.finished(table: "big", connection: flooder, principal: "", seconds: 2, now: 2)
        queue.replyWritten(flooder)
        queue.add("b", table: "big", connection: flooder, principal: "")
        XCTAssertNil(queue.next(now: 2))
        // 2 s halving every second reaches 0.5 s after 2 s.
        let wake = try XCTUnwrap(queue.wakeTime(now: 2))
        XCTAssertEqual(wake, 4, accuracy: 1e-9)
        XCTAssertNil(queue.next(now: 3.9))
        XCTAssertEqual(queue.next(now: 4.0001)?.request, "b")
        XCTAssertNil(queue.wakeTime(now: 4.0001))
    }

    func testAPrincipalIsPacedAcrossItsConnectionsButNotTheAnonymousOne() {
        // Three connections of token-a use 0.4 s each: each under its own bound (0.5 s), together over the
        // principal's (1 s). A fourth connection of token-a waits; the team's probe does not.
        var queue = HistoryReadQueue<String>()
        for number in 1...3 {
            let connection = WebSocketConnectionID(rawValue: UInt64(number))
            queue.add("warm", table: "big", connection: connection, principal: "token-a")
            XCTAssertNotNil(queue.next(now: 0))
            queue.finished(table: "big", connection: connection, principal: "token-a", seconds: 0.4, now: 0)
            queue.replyWritten(connection)
        }
        queue.add(
            "fourth connection of token-a", table: "big", connection: WebSocketConnectionID(rawValue: 9),
            principal: "token-a")
        XCTAssertNil(queue.next(now: 0))
        queue.add("team's", table: "big", connection: probe, principal: "team")
        XCTAssertEqual(queue.next(now: 0)?.request, "team's")
        // Without tokens every client is the empty principal: only connections are paced.
        var open = HistoryReadQueue<String>()
        for number in 1...5 {
            let connection = WebSocketConnectionID(rawValue: UInt64(number))
            open.add("r\(number)", table: "big", connection: connection, principal: "")
            XCTAssertEqual(open.next(now: 0)?.request, "r\(number)")
            open.finished(table: "big", connection: connection, principal: "", seconds: 0.4, now: 0)
        }
    }

    func testTheLightLaneTakesOnlyReadsExpectedToBeCheap() {
        var queue = HistoryReadQueue<String>()
        queue.add("flood 1", table: "big", connection: flooder, principal: "")
        XCTAssertEqual(queue.next(now: 0, lightOnly: true)?.request, "flood 1", "nothing is known of it yet")
        queue.finished(table: "big", connection: flooder, principal: "", seconds: 0.1, now: 0.1)
        queue.replyWritten(flooder)
        queue.add("flood 2", table: "big", connection: flooder, principal: "")
        // However long ago its last read, an expensive reader stays off the light lane, and so does a newcomer
        // reading the table whose reads are expensive.
        queue.add("newcomer", table: "big", connection: other, principal: "")
        XCTAssertNil(queue.next(now: 60, lightOnly: true))
        queue.add("probe", table: "small", connection: probe, principal: "")
        XCTAssertEqual(queue.next(now: 60, lightOnly: true)?.request, "probe")
        queue.finished(table: "small", connection: probe, principal: "", seconds: 0.002, now: 60)
        queue.replyWritten(probe)
        queue.add("probe 2", table: "small", connection: probe, principal: "")
        XCTAssertEqual(queue.next(now: 60, lightOnly: true)?.request, "probe 2")
        XCTAssertEqual(queue.next(now: 60)?.request, "newcomer", "it has cost nothing yet")
        XCTAssertEqual(queue.next(now: 60)?.request, "flood 2")
    }

    func testAClosedConnectionsRequestsAreDroppedAndHandedBackToBeAnswered() {
        var queue = HistoryReadQueue<String>()
        queue.add("a", table: "big", connection: flooder, principal: "")
        queue.add("b", table: "big", connection: flooder, principal: "")
        queue.add("c", table: "big", connection: WebSocketConnectionID(rawValue: 99), principal: "")
        XCTAssertEqual(queue.remove(flooder), ["a", "b"])
        XCTAssertEqual(queue.count, 1)
        XCTAssertEqual(queue.removeAll(), ["c"], "at shutdown, everything still waiting")
        XCTAssertEqual(queue.count, 0)
        XCTAssertNil(queue.next(now: 0))
    }
}
