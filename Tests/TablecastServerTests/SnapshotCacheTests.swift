import TableModel
import XCTest

@testable import TablecastServer

final class SnapshotCacheTests: XCTestCase {
    private func key(_ table: String, epoch: Int64 = 1, _ version: Int64) -> SnapshotCache<Table>.Key {
        .init(table: table, epoch: epoch, version: version)
    }

    private func table(_ version: UInt64) -> Table { Table(version: version) }

    func testKeepsTheMostRecentlyUsedUpToItsCapacity() {
        var cache = SnapshotCache<Table>(capacity: 2)
        cache.insert(table(1), for: key("a", 1))
        cache.insert(table(2), for: key("b", 2))
        XCTAssertEqual(cache.value(key("a", 1))?.version, 1) // a is now the most recent
        cache.insert(table(3), for: key("c", 3)) // b goes
        XCTAssertNil(cache.value(key("b", 2)))
        XCTAssertEqual(cache.value(key("a", 1))?.version, 1)
        XCTAssertEqual(cache.value(key("c", 3))?.version, 3)
    }

    func testAnotherEpochOrVersionIsAnotherSnapshot() {
        var cache = SnapshotCache<Table>(capacity: 4)
        cache.insert(table(1), for: key("a", epoch: 1, 0))
        XCTAssertNil(cache.value(key("a", epoch: 2, 0)), "a table dropped and created again has other snapshots")
        XCTAssertNil(cache.value(key("a", epoch: 1, 1000)))
        cache.insert(table(5), for: key("a", epoch: 1, 0))
        XCTAssertEqual(cache.value(key("a", epoch: 1, 0))?.version, 5, "inserting again replaces")
    }
}
