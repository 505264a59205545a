import TablecastServer
import XCTest

final class TokenBucketTests: XCTestCase {
    func testBurstThenRefillAtTheRate() {
        var bucket = TokenBucket(rate: 8, burst: 3)
        XCTAssertEqual((0..<5).map { _ in bucket.take(now: 100) }, [true, true, true, false, false])
        XCTAssertFalse(bucket.take(now: 100.0625), "half a token is not a token")
        XCTAssertTrue(bucket.take(now: 100.125))
        XCTAssertFalse(bucket.take(now: 100.125))
        // A long pause refills only up to the burst.
        XCTAssertEqual((0..<4).map { _ in bucket.take(now: 200) }, [true, true, true, false])
    }

    func testClockSteppingBackAddsNothing() {
        var bucket = TokenBucket(rate: 1, burst: 1)
        XCTAssertTrue(bucket.take(now: 50))
        XCTAssertFalse(bucket.take(now: 10))
        XCTAssertFalse(bucket.take(now: 50.5))
        XCTAssertTrue(bucket.take(now: 51))
    }

    func testSustainedRateIsBounded() {
        var bucket = TokenBucket(rate: 1000, burst: 1000)
        var taken = 0
        // 10 seconds of requests every 100 µs (100,000 attempts): at most burst + rate × 10 s succeed.
        for i in 0..<100_000 where bucket.take(now: Double(i) * 0.0001) { taken += 1 }
        XCTAssertEqual(taken, 1000 + 9_999, accuracy: 2)
    }
}
