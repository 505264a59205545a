import XCTest

@testable import WebSocketTransport

/// Keep-alive connections waiting for their next request, as time is stepped.
final class IdleKeepAlivesTests: XCTestCase {
    func testAConnectionExpiresOnceWhenItHasWaitedTheTimeout() {
        var waits = IdleKeepAlives(timeout: .seconds(5))
        waits.waiting(7, at: 1_000_000_000)
        waits.waiting(8, at: 2_000_000_000)
        XCTAssertEqual(waits.count, 2)
        XCTAssertEqual(waits.removeExpired(at: 5_999_999_999), [], "a nanosecond early")
        XCTAssertEqual(waits.removeExpired(at: 6_000_000_000), [7])
        XCTAssertEqual(waits.removeExpired(at: 6_000_000_000), [])
        XCTAssertEqual(waits.removeExpired(at: 60_000_000_000), [8])
        XCTAssertEqual(waits.removeExpired(at: 60_000_000_000), [], "each wait expires once")
        XCTAssertEqual(waits.count, 0)
    }

    /// A request ends the wait, and the next response starts a new one, counted from then. The same holds for a key
    /// that lws reuses for a new connection after the old one closed. A connection is one entry however many
    /// requests it makes.
    func testARequestOrACloseEndsTheWaitAndTheNextWaitCountsFromItsStart() {
        var waits = IdleKeepAlives(timeout: .seconds(5))
        waits.waiting(7, at: 0)
        waits.stopped(7)
        XCTAssertEqual(waits.count, 0)
        XCTAssertEqual(waits.removeExpired(at: 10_000_000_000), [], "no longer waiting")

        for second in 10...13 {
            waits.waiting(7, at: UInt64(second) * 1_000_000_000)
            waits.stopped(7)
        }
        waits.waiting(7, at: 14_000_000_000)
        XCTAssertEqual(waits.count, 1)
        XCTAssertEqual(waits.removeExpired(at: 16_000_000_000), [], "counted from the last response")
        XCTAssertEqual(waits.removeExpired(at: 19_000_000_000), [7])

        waits.stopped(9)
        XCTAssertEqual(waits.count, 0, "stopping a connection that was not waiting changes nothing")
    }
}
