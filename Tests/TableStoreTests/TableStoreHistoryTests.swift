import Foundation
import XCTest

@testable import TableStore

/// History reads (the log between two versions, the table at a version) and the retention that bounds them.
final class TableStoreHistoryTests: XCTestCase {
    /// A store that snapshots every 10 versions, with `retention`.
    private func store(
        _ directory: URL, _ retention: HistoryRetention?, catchUp: Int64 = 0
    ) throws -> SQLiteTableStore {
        try SQLiteTableStore.open(in: directory) {
            $0.history = retention
            $0.retention = .versionsBeforeSnapshot(catchUp)
        }
    }

    /// Commits versions `versions` of `table` with a snapshot body "s<version>" at every multiple of 10 and
    /// commit times `time(version)`.
    private func commit(
        _ store: SQLiteTableStore, _ table: String, _ versions: ClosedRange<Int64>,
        time: (Int64) -> Int64 = { 1_700_000_000_000 + $0 }
    ) throws {
        for version in versions {
            var next = record(
                table, version, client: "c\(version % 3)", snapshot: version % 10 == 0 ? "s\(version)" : nil)
            next.originName = "name\(version % 3)"
            next.time = time(version)
            try store.commit([next])
        }
    }

    func testRetentionParsesCountsDurationsAndBoth() {
        XCTAssertEqual(HistoryRetention("10000"), HistoryRetention(versions: 10_000))
        XCTAssertEqual(HistoryRetention("30d"), HistoryRetention(age: 30 * 86_400_000))
        XCTAssertEqual(HistoryRetention("10000,30d"), HistoryRetention(versions: 10_000, age: 30 * 86_400_000))
        XCTAssertEqual(HistoryRetention("12h,5"), HistoryRetention(versions: 5, age: 12 * 3_600_000))
        XCTAssertEqual(HistoryRetention("all"), .all)
        for bad in ["", "x", "30x", "-1", "1,2", "1d,2d", "1,2,3", "d", "10000,"] {
            XCTAssertNil(HistoryRetention(bad), bad)
        }
        XCTAssertEqual(HistoryRetention(versions: 10_000, age: 30 * 86_400_000).description, "10000,30d")
        XCTAssertEqual(HistoryRetention(age: 90_000).description, "90s")
    }

    func testHistoryPagesNewestAndOldestFirstWithOrigins() throws {
        let store = try store(makeTemporaryDirectory(for: self), .all)
        try store.createTestTable("t")
        try commit(store, "t", 1...25)
        let newest = try store.history("t", from: 0, to: .max, limit: 3, newestFirst: true)
        XCTAssertEqual(newest.entries.map(\.version), [25, 24, 23])
        XCTAssertEqual(newest.oldest, 0)
        XCTAssertEqual(newest.info.version, 25)
        XCTAssertEqual(newest.entries[0].originClient, "c1")
        XCTAssertEqual(newest.entries[0].originName, "name1")
        XCTAssertEqual(newest.entries[0].time, 1_700_000_000_025)
        XCTAssertEqual(newest.entries[0].batch, "{\"v\":25}")
        let oldest = try store.history("t", from: 5, to: 8, limit: 10, newestFirst: false)
        XCTAssertEqual(oldest.entries.map(\.version), [5, 6, 7, 8])
        // A page ends one entry after those whose batches reach the byte bound (each is 8 bytes here).
        for (byteLimit, versions) in [(1, [25, 24]), (8, [25, 24]), (9, [25, 24, 23]), (17, [25, 24, 23, 22])]
            as [(Int, [Int64])]
        {
            let bounded = try store.history("t", from: 0, to: .max, limit: 10, byteLimit: byteLimit, newestFirst: true)
            XCTAssertEqual(bounded.entries.map(\.version), versions, "byteLimit \(byteLimit)")
        }
        assertThrows(.noSuchTable) { try store.history("ghost", from: 0, to: 1, limit: 1, newestFirst: true) }
    }

    func testStateAtAVersionIsTheNearestSnapshotAndTheLogUpToIt() throws {
        let store = try store(makeTemporaryDirectory(for: self), .all)
        try store.createTestTable("t")
        try commit(store, "t", 1...25)
        let at17 = try store.state("t", at: 17)
        XCTAssertEqual(at17.snapshot, Snapshot(version: 10, body: "s10"))
        XCTAssertEqual(at17.log.map(\.version), Array(11...17))
        let at20 = try store.state("t", at: 20)
        XCTAssertEqual(at20.snapshot?.version, 20)
        XCTAssertEqual(at20.log, [])
        XCTAssertEqual(try store.state("t", at: 3).snapshot?.version, 0)
        let ahead = try store.state("t", at: 26)
        XCTAssertNil(ahead.snapshot)
        XCTAssertEqual(ahead.info.version, 25)
    }

    /// Keeping 12 versions: the commit of the snapshot at 40 keeps version 28 rebuildable, so the snapshot at 20
    /// and everything after it stay. `compact` at 45 keeps 33 on, from the snapshot at 30. Retained versions are
    /// all rebuildable, across reopening, and the latest snapshot is kept whatever happens.
    func testVersionRetentionKeepsEveryRetainedVersionRebuildableAcrossReopening() throws {
        let directory = try makeTemporaryDirectory(for: self)
        do {
            let store = try store(directory, HistoryRetention(versions: 12))
            try store.createTestTable("t")
            try commit(store, "t", 1...45)
            XCTAssertEqual(try store.history("t", from: 0, to: .max, limit: 100, newestFirst: false).oldest, 20)
            try store.close()
        }
        let store = try store(directory, HistoryRetention(versions: 12))
        XCTAssertEqual(try store.history("t", from: 0, to: .max, limit: 100, newestFirst: false).oldest, 20)
        XCTAssertEqual(try store.compact("t"), 10)
        let page = try store.history("t", from: 0, to: .max, limit: 100, newestFirst: false)
        XCTAssertEqual(page.oldest, 30)
        XCTAssertEqual(page.entries.map(\.version), Array(31...45))
        XCTAssertEqual(
            try store.connection.rows("SELECT version FROM snapshots ORDER BY version") { $0.int64(at: 0) }, [30, 40])
        for version in Int64(30)...45 {
            let state = try store.state("t", at: version)
            XCTAssertEqual(state.snapshot.map { $0.version + Int64(state.log.count) }, version)
        }
        XCTAssertNil(try store.state("t", at: 29).snapshot)
        XCTAssertEqual(try store.compact("t"), 0)
        try store.close()
        let shorter = try self.store(directory, HistoryRetention(versions: 5))
        XCTAssertEqual(try shorter.compact("t"), 10)
        XCTAssertEqual(try shorter.history("t", from: 0, to: .max, limit: 100, newestFirst: false).oldest, 40)
        XCTAssertEqual(try shorter.load("t").info.version, 45)
        XCTAssertEqual(try shorter.state("t", at: 45).log.map(\.version), [41, 42, 43, 44, 45])
    }

    /// A duration keeps what was committed within it: here versions 1...20 are 40 days old and 21...35 one day old.
    func testAgeRetentionKeepsRecentVersionsAndTheVersionBoundKeepsMore() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        let time = { (version: Int64) in version <= 20 ? now - 40 * day : now - day }
        let directory = try makeTemporaryDirectory(for: self)
        do {
            let store = try store(directory, HistoryRetention("30d"))
            try store.createTestTable("t")
            try commit(store, "t", 1...35, time: time)
            // Versions 21... are within 30 days: the snapshot at 20 (at or below 21's predecessor) stays.
            XCTAssertEqual(try store.history("t", from: 0, to: .max, limit: 1, newestFirst: false).oldest, 20)
        }
        let both = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self)) {
            $0.history = HistoryRetention("30,30d")
            $0.retention = .versionsBeforeSnapshot(0)
        }
        try both.createTestTable("t")
        try commit(both, "t", 1...35, time: time)
        // 30 versions reach back to version 6, beyond the 30 days: the snapshot at 0 is still needed.
        XCTAssertEqual(try both.history("t", from: 0, to: .max, limit: 1, newestFirst: false).oldest, 0)
    }

    /// The catch-up floor (`retention`) keeps log entries behind the latest snapshot even when history keeps fewer.
    func testTheCatchUpFloorStillHolds() throws {
        let store = try store(makeTemporaryDirectory(for: self), HistoryRetention(versions: 1), catchUp: 15)
        try store.createTestTable("t")
        try commit(store, "t", 1...40)
        // Latest snapshot 40 minus 15 = 25: the snapshot at 20 is the newest at or below it.
        XCTAssertEqual(try store.oldestLogVersion("t"), 21)
        XCTAssertEqual(try store.history("t", from: 0, to: .max, limit: 1, newestFirst: false).oldest, 20)
    }

    /// A schema version 2 file (log entries without names) is migrated in place: its entries read with an empty
    /// name, new ones keep theirs.
    func testASchemaVersion2FileIsMigrated() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("tablecast.db").path
        do {
            let store = try SQLiteTableStore.open(in: directory)
            try store.createTestTable("t")
            try store.commit([record("t", 1)])
            try store.close()
        }
        try SQLiteConnection(path: path).execute(
            """
            ALTER TABLE log DROP COLUMN origin_name; ALTER TABLE log DROP COLUMN origin_user; DROP TABLE meta;
            PRAGMA user_version = 2
            """)
        let store = try SQLiteTableStore.open(in: directory)
        XCTAssertEqual(try store.pragma("user_version"), "\(Schema.version)")
        var next = record("t", 2)
        next.originName = "Ana"
        next.originUser = "ana"
        try store.commit([next])
        XCTAssertEqual(try store.logEntries("t", after: 0).map(\.originName), ["", "Ana"])
        XCTAssertEqual(try store.logEntries("t", after: 0).map(\.originUser), ["", "ana"])
    }
}
