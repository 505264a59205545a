import CSQLite
import Foundation
import XCTest

@testable import TableStore

final class SQLiteConnectionTests: XCTestCase {
    private func open() throws -> SQLiteConnection {
        try SQLiteConnection(path: makeTemporaryDirectory(for: self).appendingPathComponent("test.db").path)
    }

    func testExecuteRunsScriptsAndRowsReadResults() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'one'); INSERT INTO t VALUES (2, 'two')")
        XCTAssertEqual(db.changes, 1)
        let rows = try db.rows("SELECT a, b FROM t WHERE a >= ?1 ORDER BY a", [1]) { ($0.int64(at: 0), $0.text(at: 1)) }
        XCTAssertEqual(rows.map(\.0), [1, 2])
        XCTAssertEqual(rows.map(\.1), ["one", "two"])
        XCTAssertNil(try db.firstRow("SELECT a FROM t WHERE a > 5") { $0.int64(at: 0) })
    }

    func testCachedStatementsArePreparedOnce() throws {
        let db = try open()
        let first = try db.cachedStatement("SELECT 1")
        XCTAssertTrue(first === (try db.cachedStatement("SELECT 1")))
        XCTAssertFalse(first === (try db.prepare("SELECT 1")))
    }

    func testTransactionsAreVisible() throws {
        let db = try open()
        XCTAssertFalse(db.isInTransaction)
        try db.execute("BEGIN")
        XCTAssertTrue(db.isInTransaction)
        try db.execute("ROLLBACK")
        XCTAssertFalse(db.isInTransaction)
    }

    func testErrorsCarryCodesMessageAndStatement() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)")
        try db.run("INSERT INTO t VALUES (?1)", [1])
        XCTAssertThrowsError(try db.run("INSERT INTO t VALUES (?1)", [1])) { error in
            guard let error = error as? SQLiteError else { return XCTFail("\(error)") }
            XCTAssertTrue(error.isConstraint)
            XCTAssertEqual(error.code, SQLITE_CONSTRAINT)
            XCTAssertEqual(error.extendedCode, SQLITE_CONSTRAINT | (6 << 8), "SQLITE_CONSTRAINT_PRIMARYKEY")
            XCTAssertTrue(error.message.contains("UNIQUE constraint failed"), error.message)
            XCTAssertEqual(error.sql, "INSERT INTO t VALUES (?1)")
        }
        XCTAssertThrowsError(try db.prepare("SELEKT")) { error in
            XCTAssertEqual((error as? SQLiteError)?.code, SQLITE_ERROR)
        }
    }

    func testReadOnlyConnectionsRejectWrites() throws {
        let path = try makeTemporaryDirectory(for: self).appendingPathComponent("test.db").path
        try SQLiteConnection(path: path).execute("CREATE TABLE t (a)")
        let db = try SQLiteConnection(path: path, flags: [.readOnly])
        XCTAssertTrue(db.isReadOnly)
        XCTAssertThrowsError(try db.execute("INSERT INTO t VALUES (1)")) { error in
            XCTAssertTrue((error as? SQLiteError)?.isReadOnly ?? false, "\(error)")
        }
    }

    func testAMissingFileWithoutCreateCannotBeOpened() throws {
        let path = try makeTemporaryDirectory(for: self).appendingPathComponent("missing.db").path
        XCTAssertThrowsError(try SQLiteConnection(path: path, flags: [.readWrite])) { error in
            XCTAssertTrue((error as? SQLiteError)?.isCantOpen ?? false, "\(error)")
        }
    }

    func testAClosedConnectionRefusesWorkButItsStatementsStayValid() throws {
        let db = try open()
        let statement = try db.prepare("SELECT 42")
        db.close()
        db.close()
        XCTAssertThrowsError(try db.execute("SELECT 1"))
        // sqlite3_close_v2 keeps the handle until this statement is finalized.
        XCTAssertEqual(try statement.firstRow { $0.int64(at: 0) }, 42)
    }
}

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
