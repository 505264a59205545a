import Foundation
import TableStore
import XCTest

/// The check that a connection is used by one thread at a time. Every SQLite and PostgreSQL connection the suite uses
/// runs it (debug builds), so the whole suite checks the store's confinement; this checks the check.
final class ExclusiveUseTests: XCTestCase {
    func testTheThreadInsideMayEnterAgainAndAnotherMayNot() {
        let use = ExclusiveUse()
        XCTAssertTrue(use.enter())
        XCTAssertTrue(use.enter(), "a transaction running its statements")
        let other = expectation(description: "another thread")
        Thread {
            XCTAssertFalse(use.enter(), "two threads inside at once")
            other.fulfill()
        }.start()
        wait(for: [other], timeout: 5)
        use.leave()
        use.leave()
        let after = expectation(description: "after")
        Thread {
            XCTAssertTrue(use.enter(), "free again once the first left as often as it entered")
            use.leave()
            after.fulfill()
        }.start()
        wait(for: [after], timeout: 5)
    }
}
