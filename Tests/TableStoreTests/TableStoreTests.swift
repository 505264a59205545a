import Foundation
import XCTest

@testable import TableStore

final class TableStoreTests: XCTestCase {
    func testCreatedTablesAreListedAndLoadAtVersionZero() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTable("states", epoch: 7, rules: "{\"lock\":[]}", snapshot: "{\"sections\":[]}", created: 42)
        try store.createTestTable("alpha")

        XCTAssertEqual(try store.listTables().map(\.name), ["alpha", "states"])
        XCTAssertEqual(
            try store.table("states"),
            TableInfo(name: "states", epoch: 7, rules: "{\"lock\":[]}", created: 42, version: 0))
        let loaded = try store.load("states")
        XCTAssertEqual(loaded.snapshot, Snapshot(version: 0, body: "{\"sections\":[]}"))
        XCTAssertEqual(loaded.log, [])
        XCTAssertNil(try store.oldestLogVersion("states"))
    }

    func testCreatingAnExistingTableFails() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("states", epoch: 1)
        let error = assertThrows(.tableExists) { try store.createTestTable("states", epoch: 2) }
        XCTAssertTrue(error?.message.contains("states") ?? false)
        XCTAssertEqual(try store.table("states")?.epoch, 1)
    }

    func testCommittedRecordsRoundTripThroughLoadAndLogEntries() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("states")
        try store.commit([record("states", 1, client: "alice", ref: "a1"), record("states", 2, client: "bob")])

        let loaded = try store.load("states")
        XCTAssertEqual(loaded.info.version, 2)
        XCTAssertEqual(loaded.snapshot.version, 0)
        XCTAssertEqual(
            loaded.log,
            [
                LogEntry(
                    table: "states", version: 1, batch: "{\"v\":1}", originClient: "alice", originRef: "a1",
                    time: 1_700_000_000_001),
                LogEntry(
                    table: "states", version: 2, batch: "{\"v\":2}", originClient: "bob", originRef: nil,
                    time: 1_700_000_000_002),
            ])
        XCTAssertEqual(try store.logEntries("states", after: 1).map(\.version), [2])
        XCTAssertEqual(try store.logEntries("states", after: 0, limit: 1).map(\.version), [1])
        XCTAssertEqual(try store.oldestLogVersion("states"), 1)
    }

    func testTextsKeepEveryUTF8CharacterAndEmbeddedNUL() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("t")
        let batch = "{\"value\":\"Привет 表 🚀 a\u{0}b\"}"
        var first = record("t", 1, ref: "")
        first.batch = batch
        try store.commit([first])
        XCTAssertEqual(try store.load("t").log.first?.batch, batch)
        XCTAssertEqual(try store.ack(client: "alice", ref: "")?.version, 1)
    }

    func testGroupCommitSpansTables() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("a")
        try store.createTestTable("b")
        try store.commit([record("a", 1), record("b", 1), record("a", 2), record("b", 2), record("b", 3)])
        XCTAssertEqual(try store.table("a")?.version, 2)
        XCTAssertEqual(try store.load("b").log.map(\.version), [1, 2, 3])
    }

    /// A table's consecutive records advance its row once; the rules that take effect are the run's latest.
    func testRulesInsideARunOfRecordsTakeEffectInOrder() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("a")
        var group = records("a", 1...4)
        group[1].rules = "{\"moves\":\"none\"}"
        try store.commit(group)
        XCTAssertEqual(try store.table("a")?.rules, "{\"moves\":\"none\"}")
        group = records("a", 5...6)
        group[0].rules = "{\"first\":true}"
        group[1].rules = "{\"second\":true}"
        try store.commit(group)
        XCTAssertEqual(try store.table("a")?.version, 6)
        XCTAssertEqual(try store.table("a")?.rules, "{\"second\":true}")
        try store.commit(records("a", 7...7))
        XCTAssertEqual(try store.table("a")?.rules, "{\"second\":true}", "a record without rules keeps them")
        XCTAssertEqual(try store.load("a").log.map(\.version), Array(1...7))
    }

    func testADuplicateVersionRollsTheWholeGroupBack() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("a")
        try store.createTestTable("b")
        try store.commit([record("a", 1)])

        let error = assertThrows(.conflict) {
            try store.commit([record("b", 1, ref: "b1"), record("a", 2, ref: "a2"), record("a", 2, ref: "a2-again")])
        }
        XCTAssertTrue(error?.message.contains("table a is at version 2") ?? false, "\(String(describing: error))")

        XCTAssertEqual(try store.table("a")?.version, 1)
        XCTAssertEqual(try store.table("b")?.version, 0)
        XCTAssertEqual(try store.count("log"), 1)
        XCTAssertNil(try store.ack(client: "alice", ref: "b1"))
        // Still usable: the same versions commit once the bad record is gone.
        try store.commit([record("b", 1, ref: "b1"), record("a", 2, ref: "a2")])
        XCTAssertEqual(try store.ack(client: "alice", ref: "b1")?.table, "b")
    }

    func testAGapOrAMissingTableRollsTheGroupBack() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("a")
        assertThrows(.conflict) { try store.commit([record("a", 1), record("a", 3)]) }
        assertThrows(.noSuchTable) { try store.commit([record("a", 1), record("ghost", 1)]) }
        XCTAssertEqual(try store.table("a")?.version, 0)
        XCTAssertEqual(try store.count("log"), 0)
    }

    func testARefStoredTwiceIsAConflict() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("a")
        try store.commit([record("a", 1, ref: "same")])
        assertThrows(.conflict) { try store.commit([record("a", 2, ref: "same")]) }
        XCTAssertEqual(try store.table("a")?.version, 1)
        // Another client may use the same ref.
        try store.commit([record("a", 2, client: "bob", ref: "same")])
    }

    func testRefsSurviveReopeningAndOnlyTheLastNPerClientAreKept() throws {
        let directory = try makeTemporaryDirectory(for: self)
        do {
            let store = try SQLiteTableStore.open(in: directory) { $0.refsPerClient = 3 }
            try store.createTestTable("t")
            for version in Int64(1)...5 {
                try store.commit([record("t", version, client: "alice", ref: "a\(version)")])
            }
            try store.commit([record("t", 6, client: "bob", ref: "b6")])
            try store.close()
        }
        let store = try SQLiteTableStore.open(in: directory) { $0.refsPerClient = 3 }
        XCTAssertNil(try store.ack(client: "alice", ref: "a1"))
        XCTAssertNil(try store.ack(client: "alice", ref: "a2"))
        XCTAssertEqual(
            try store.ack(client: "alice", ref: "a3"),
            StoredAck(table: "t", version: 3, ack: "{\"ref\":\"a3\",\"version\":3}"))
        XCTAssertEqual(try store.ack(client: "alice", ref: "a5")?.version, 5)
        XCTAssertEqual(try store.ack(client: "bob", ref: "b6")?.version, 6)
        XCTAssertEqual(try store.count("refs"), 4)
        XCTAssertNil(try store.ack(client: "bob", ref: "a5"))
    }

    func testTheDefaultKeepsAtLeastTenThousandRefsPerClientAndBoundsTheRest() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("t")
        try store.commit((1...10_200).map { record("t", Int64($0), ref: "r\($0)") })
        XCTAssertNil(try store.ack(client: "alice", ref: "r1"))
        for kept in [201, 5_000, 10_200] {
            XCTAssertEqual(try store.ack(client: "alice", ref: "r\(kept)")?.version, Int64(kept))
        }
        // Pruning runs every 1/64th of the quota: between 10,000 and 10,156 refs stay.
        XCTAssertEqual(try store.count("refs"), 10_060)
    }

    func testARolledBackCommitDoesNotSkipRefSequenceNumbers() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self)) { $0.refsPerClient = 2 }
        try store.createTestTable("t")
        try store.commit([record("t", 1, ref: "a")])
        assertThrows(.conflict) { try store.commit([record("t", 2, ref: "b"), record("t", 9, ref: "c")]) }
        try store.commit([record("t", 2, ref: "b")])
        try store.commit([record("t", 3, ref: "c")])
        // With contiguous sequence numbers 1, 2, 3 the quota of 2 keeps exactly b and c.
        XCTAssertNil(try store.ack(client: "alice", ref: "a"))
        XCTAssertEqual(try store.count("refs"), 2)
    }

    func testLoadReturnsTheLatestSnapshotAndTheLogAfterIt() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self)) { $0.retention = .keepAll }
        try store.createTestTable("t")
        try store.commit(records("t", 1...3))
        try store.commit([record("t", 4, snapshot: "{\"v\":4}")])
        try store.commit(records("t", 5...6))

        let loaded = try store.load("t")
        XCTAssertEqual(loaded.snapshot, Snapshot(version: 4, body: "{\"v\":4}"))
        XCTAssertEqual(loaded.log.map(\.version), [5, 6])
        XCTAssertEqual(loaded.info.version, 6)
        // keepAll: the log still serves a subscriber from the start; only the older snapshot went.
        XCTAssertEqual(try store.oldestLogVersion("t"), 1)
        XCTAssertEqual(try store.count("snapshots"), 1)
    }

    func testCommitsWithSnapshotsKeepTheLogBounded() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self)) {
            $0.retention = .versionsBeforeSnapshot(5)
        }
        try store.createTestTable("t")
        for version in Int64(1)...100 {
            try store.commit([record("t", version, snapshot: version % 10 == 0 ? "{\"v\":\(version)}" : nil)])
        }
        // Latest snapshot at 100 keeps 96...100.
        XCTAssertEqual(try store.oldestLogVersion("t"), 96)
        XCTAssertEqual(try store.count("log"), 5)
        let loaded = try store.load("t")
        XCTAssertEqual(loaded.snapshot.version, 100)
        XCTAssertEqual(loaded.log, [])
        XCTAssertEqual(try store.logEntries("t", after: 95).map(\.version), [96, 97, 98, 99, 100])
    }

    func testCompactBoundsTheLogAndLoadStillReconstructs() throws {
        let directory = try makeTemporaryDirectory(for: self)
        do {
            let store = try SQLiteTableStore.open(in: directory) { $0.autoCompact = false }
            try store.createTestTable("a")
            try store.createTestTable("b")
            try store.commit(records("a", 1...30))
            try store.commit([record("a", 31, snapshot: "{\"v\":31}")])
            try store.commit(records("a", 32...35))
            try store.commit(records("b", 1...10))
            XCTAssertEqual(try store.count("log"), 45)
            XCTAssertEqual(try store.count("snapshots"), 3)
        }
        let store = try SQLiteTableStore.open(in: directory) { $0.retention = .versionsBeforeSnapshot(2) }
        XCTAssertEqual(try store.compact("a"), 29)
        XCTAssertEqual(try store.oldestLogVersion("a"), 30)
        let loaded = try store.load("a")
        XCTAssertEqual(loaded.snapshot.version, 31)
        XCTAssertEqual(loaded.log.map(\.version), [32, 33, 34, 35])
        // b has only its version-0 snapshot: nothing before it to drop.
        XCTAssertEqual(try store.compactAll(), 0)
        XCTAssertEqual(try store.load("b").log.count, 10)
        XCTAssertEqual(try store.count("snapshots"), 2)
        assertThrows(.noSuchTable) { try store.compact("ghost") }
    }

    func testDropTableRemovesLogAndSnapshotsButKeepsRefs() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("t")
        try store.commit([record("t", 1, ref: "r1")])
        try store.dropTable("t")
        XCTAssertEqual(try store.listTables(), [])
        XCTAssertEqual(try store.count("log"), 0)
        XCTAssertEqual(try store.count("snapshots"), 0)
        XCTAssertEqual(try store.ack(client: "alice", ref: "r1")?.version, 1)
        assertThrows(.noSuchTable) { try store.load("t") }
        assertThrows(.noSuchTable) { try store.dropTable("t") }
        // The name is free again, starting over at version 0.
        try store.createTestTable("t", epoch: 2)
        try store.commit([record("t", 1)])
        XCTAssertEqual(try store.load("t").info.epoch, 2)
    }

    func testRulesChangeAloneOrWithAVersion() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self))
        try store.createTestTable("t")
        var seen: String?
        let stored = try store.updateRules(of: "t") {
            seen = $0
            return "{\"a\":1}"
        }
        XCTAssertEqual(seen, "{}")
        XCTAssertEqual(stored, "{\"a\":1}")
        XCTAssertEqual(try store.table("t")?.rules, "{\"a\":1}")
        var withRules = record("t", 1)
        withRules.rules = "{\"b\":2}"
        try store.commit([withRules, record("t", 2)])
        XCTAssertEqual(try store.load("t").info.rules, "{\"b\":2}")
        assertThrows(.noSuchTable) { try store.updateRules(of: "ghost") { _ in "{}" } }
    }

    func testWALAndTheChosenSynchronousLevelAreInEffect() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let full = try SQLiteTableStore.open(in: directory, name: "full.db")
        XCTAssertEqual(try full.pragma("journal_mode"), "wal")
        XCTAssertEqual(try full.pragma("synchronous"), "2")
        XCTAssertEqual(try full.pragma("application_id"), "\(Schema.applicationID)")
        XCTAssertEqual(try full.pragma("user_version"), "\(Schema.version)")
        let normal = try SQLiteTableStore.open(in: directory, name: "normal.db") { $0.synchronous = .normal }
        XCTAssertEqual(try normal.pragma("journal_mode"), "wal")
        XCTAssertEqual(try normal.pragma("synchronous"), "1")
    }

    func testCloseCheckpointsAndTruncatesTheWAL() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let store = try SQLiteTableStore.open(in: directory)
        try store.createTestTable("t")
        try store.commit(records("t", 1...50))
        let wal = directory.appendingPathComponent("tablecast.db-wal").path
        XCTAssertGreaterThan(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? 0, 0)
        try store.close()
        let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        XCTAssertEqual(size, 0)
        assertThrows(.internal) { try store.listTables() }
        XCTAssertEqual(try SQLiteTableStore.open(in: directory).load("t").info.version, 50)
    }
}
