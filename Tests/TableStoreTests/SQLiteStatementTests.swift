import TableStore
import XCTest

final class SQLiteStatementTests: XCTestCase {
    func testEveryStorageClassRoundTrips() throws {
        let db = try SQLiteConnection(path: ":memory:")
        let values: [SQLiteValue] = [
            .integer(.min), .integer(.max), .real(-1.5), .text(""), .text("naïve 表 🚀 a\u{0}b"), .blob([]),
            .blob([0, 255, 1]), .null,
        ]
        for value in values {
            let back = try db.firstRow("SELECT ?1, typeof(?1)", [value]) { ($0.value(at: 0), $0.text(at: 1)) }
            switch value {
            // SQLite keeps an empty blob as a zero-length blob, never as NULL.
            case .blob([]): XCTAssertEqual(back?.1, "blob")
            case .text(""): XCTAssertEqual(back?.1, "text")
            default: break
            }
            XCTAssertEqual(back?.0, value)
        }
    }

    func testTypedAccessorsAndColumnNames() throws {
        let db = try SQLiteConnection(path: ":memory:")
        let statement = try db.prepare("SELECT ?1 AS n, ?2 AS d, ?3 AS t, ?4 AS b, ?5 AS z")
        try statement.bind(Int64(7), at: 1)
        try statement.bind(2.5, at: 2)
        try statement.bind("text", at: 3)
        try statement.bind([1, 2, 3] as [UInt8], at: 4)
        try statement.bindNull(at: 5)
        XCTAssertTrue(try statement.step())
        XCTAssertEqual(statement.columnCount, 5)
        XCTAssertEqual((0..<5).map(statement.columnName(at:)), ["n", "d", "t", "b", "z"])
        XCTAssertEqual(statement.int64(at: 0), 7)
        XCTAssertEqual(statement.double(at: 1), 2.5)
        XCTAssertEqual(statement.text(at: 2), "text")
        XCTAssertEqual(statement.blob(at: 3), [1, 2, 3])
        XCTAssertTrue(statement.isNull(at: 4))
        XCTAssertNil(statement.optionalText(at: 4))
        XCTAssertFalse(try statement.step())
    }

    func testRebindingResetsTheStatement() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2), (3)")
        let statement = try db.cachedStatement("SELECT a FROM t WHERE a >= ?1 ORDER BY a")
        try statement.bind([1])
        XCTAssertTrue(try statement.step())
        // Abandoned halfway; the next use starts over.
        XCTAssertEqual(try statement.rows([2]) { $0.int64(at: 0) }, [2, 3])
    }
}
