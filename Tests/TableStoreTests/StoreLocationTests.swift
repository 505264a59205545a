import TableStore
import XCTest

final class StoreLocationTests: XCTestCase {
    func testAPostgreSQLURLIsSharedAndAnythingElseIsASQLiteFile() throws {
        XCTAssertEqual(
            StoreLocation("postgresql://tablecast@db:5432/lists"),
            .postgres(url: "postgresql://tablecast@db:5432/lists"))
        XCTAssertEqual(StoreLocation("postgres://db/lists"), .postgres(url: "postgres://db/lists"))
        XCTAssertEqual(StoreLocation("/var/lib/tablecast/lists.db"), .sqlite(path: "/var/lib/tablecast/lists.db"))
        XCTAssertEqual(StoreLocation("postgres.db"), .sqlite(path: "postgres.db"))
        XCTAssertTrue(StoreLocation("postgresql://db/x").isShared)
        XCTAssertFalse(StoreLocation("tablecast.db").isShared)
        // openStore gives the protocol only; a new file is a SQLite store of its own.
        let path = try makeTemporaryDirectory(for: self).appendingPathComponent("t.db").path
        let store = try openStore(StoreLocation(path))
        XCTAssertFalse(store.isShared)
        XCTAssertEqual(store.location, path)
        try store.close()
    }
}
