import Foundation
import XCTest

@testable import TableStore

/// Real storage failures: each commit that hits one throws a classified error, applies nothing, and leaves the
/// store serving reads and, once the condition clears, commits.
final class TableStoreFailureTests: XCTestCase {
    func testAFullDatabaseRejectsTheGroupAndRecoversWhenThereIsRoomAgain() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("a")
        try store.createTestTable("b")
        try store.commit(records("a", 1...5))
        let pages = Int64(try store.pragma("page_count"))!
        // The page limit is SQLite's own way of running out of space: the same SQLITE_FULL a full disk gives.
        try store.connection.execute("PRAGMA max_page_count = \(pages)")

        let big = String(repeating: "x", count: 64 * 1024)
        var group = [record("b", 1), record("a", 6, ref: "a6")]
        group[1].batch = big
        let error = assertThrows(.full) { try store.commit(group) }
        XCTAssertTrue(error?.kind.isStorageFailure ?? false)
        XCTAssertTrue(error?.message.contains("full") ?? false, "\(String(describing: error))")

        XCTAssertEqual(try store.table("a")?.version, 5)
        XCTAssertEqual(try store.table("b")?.version, 0)
        XCTAssertNil(try store.ack(client: "alice", ref: "a6"))
        XCTAssertEqual(try store.load("a").log.count, 5)
        XCTAssertEqual(try store.listTables().count, 2)

        try store.connection.execute("PRAGMA max_page_count = 1073741823")
        try store.commit(group)
        XCTAssertEqual(try store.load("a").log.last?.batch, big)
        XCTAssertEqual(try store.table("b")?.version, 1)
    }

    func testAReadOnlyStoreServesReadsAndRejectsWrites() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let file = directory.appendingPathComponent("tablecast.db")
        do {
            let store = try SQLiteTableStore.open(in: directory)
            try store.createTestTable("t")
            try store.commit([record("t", 1, ref: "r1")])
            try store.close()
        }
        let before = try Data(contentsOf: file)

        let store = try SQLiteTableStore.open(in: directory) { $0.readOnly = true }
        XCTAssertEqual(try store.load("t").info.version, 1)
        XCTAssertEqual(try store.ack(client: "alice", ref: "r1")?.version, 1)
        let error = assertThrows(.readOnly) { try store.commit([record("t", 2)]) }
        XCTAssertTrue(error?.message.contains("read-only") ?? false, "\(String(describing: error))")
        assertThrows(.readOnly) { try store.createTestTable("u") }
        assertThrows(.readOnly) { try store.compactAll() }
        XCTAssertEqual(try store.load("t").info.version, 1)
        try store.close()
        XCTAssertEqual(try Data(contentsOf: file), before)
    }

    func testAnotherWritersLockMakesCommitsBusyUntilReleased() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let store = try SQLiteTableStore.open(in: directory) { $0.busyTimeout = .milliseconds(50) }
        try store.createTestTable("t")
        let other = try SQLiteConnection(path: store.path)
        try other.execute("BEGIN IMMEDIATE")

        assertThrows(.busy) { try store.commit([record("t", 1)]) }
        XCTAssertEqual(try store.load("t").info.version, 0)
        try other.execute("ROLLBACK")
        try store.commit([record("t", 1)])
        XCTAssertEqual(try store.load("t").info.version, 1)
    }

    /// The committing connection checkpoints itself when the background falls 10× behind; a reader on an old
    /// snapshot makes that RESTART checkpoint fail, and the failure is reported, not swallowed, until the WAL
    /// starts over.
    func testAFailedFallbackCheckpointIsReportedUntilTheWALStartsOver() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let store = try SQLiteTableStore.open(in: directory) {
            $0.checkpointPages = 1
            $0.busyTimeout = .milliseconds(50)
        }
        try store.createTestTable("t")
        let reader = try SQLiteConnection(path: directory.appendingPathComponent("tablecast.db").path)
        try reader.run("BEGIN")
        _ = try reader.firstRow("SELECT count(*) FROM log") { $0.int64(at: 0) }
        var version: Int64 = 0
        while store.checkpointFailure == nil, version < 100 {
            version += 1
            var big = record("t", version)
            big.batch = String(repeating: "x", count: 8000)
            try store.commit([big])
        }
        XCTAssertEqual(store.checkpointFailure?.kind, .busy, "after \(version) commits")
        XCTAssertTrue(store.checkpointFailure?.message.contains("committing connection") ?? false)

        // Without the reader a checkpoint gets through (the background one, or the fallback when the background
        // holds no lock), and the next commit starts the WAL over.
        try reader.run("COMMIT")
        for _ in 0..<50 where store.checkpointFailure != nil {
            store.checkpointer?.waitUntilIdle()
            version += 1
            try store.commit([record("t", version)])
        }
        XCTAssertNil(store.checkpointFailure)
    }
}
