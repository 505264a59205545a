import CSQLite
import Foundation
import TableStore
import XCTest

final class SQLiteConnectionTests: XCTestCase {
    private func open() throws -> SQLiteConnection {
        try SQLiteConnection(path: makeTemporaryDirectory(for: self).appendingPathComponent("test.db").path)
    }

    func testExecuteRunsScriptsAndRowsReadResults() throws {
        let db = try open()
        try db.execute(
            "CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'one'); INSERT INTO t VALUES (2, 'two')")
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
