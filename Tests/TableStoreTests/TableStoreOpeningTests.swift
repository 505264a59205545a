import Foundation
import XCTest

@testable import TableStore

/// Opening refuses every file that is not a sound Tablecast database, and leaves such a file as it was.
final class TableStoreOpeningTests: XCTestCase {
    func testGarbageIsNotADatabaseAndIsLeftUntouched() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let file = directory.appendingPathComponent("tablecast.db")
        for garbage in [Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }), Data("hello, world\n".utf8)]
        {
            try garbage.write(to: file)
            let error = assertThrows(.notADatabase) { try SQLiteTableStore.open(in: directory) }
            XCTAssertTrue(error?.message.contains(file.path) ?? false, "\(String(describing: error))")
            XCTAssertEqual(try Data(contentsOf: file), garbage)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["tablecast.db"])
    }

    func testAnotherApplicationsDatabaseIsForeign() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("tablecast.db").path
        do {
            let other = try SQLiteConnection(path: path)
            try other.execute("PRAGMA application_id = 1234; CREATE TABLE tables (name TEXT PRIMARY KEY)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = assertThrows(.foreign) { try SQLiteTableStore.open(in: directory) }
        XCTAssertTrue(error?.message.contains("application_id is 1234") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before)
        XCTAssertEqual(try SQLiteConnection(path: path).firstRow("PRAGMA journal_mode") { $0.text(at: 0) }, "delete")
    }

    func testATableLayoutThatIsNotOursIsForeign() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("tablecast.db").path
        try SQLiteConnection(path: path).execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        let error = assertThrows(.foreign) { try SQLiteTableStore.open(in: directory) }
        XCTAssertTrue(error?.message.contains("notes") ?? false, "\(String(describing: error))")
    }

    func testAnUnknownSchemaVersionIsForeign() throws {
        let directory = try makeTemporaryDirectory(for: self)
        try SQLiteTableStore.open(in: directory).close()
        try SQLiteConnection(path: directory.appendingPathComponent("tablecast.db").path).execute(
            "PRAGMA user_version = 99")
        let error = assertThrows(.foreign) { try SQLiteTableStore.open(in: directory) }
        XCTAssertTrue(error?.message.contains("schema version 99") ?? false, "\(String(describing: error))")
    }

    /// A schema version 1 file (refs keyed by client alone, without intents) is migrated on open: its refs keep
    /// their acks under the tokenless principal, with an unknown intent, and sequence numbers go on from them.
    func testASchemaVersion1FileIsMigrated() throws {
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
            DROP TABLE refs;
            CREATE TABLE refs (
                client TEXT NOT NULL, ref TEXT NOT NULL, table_name TEXT NOT NULL, version INTEGER NOT NULL,
                ack TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (client, ref)
            ) WITHOUT ROWID;
            CREATE UNIQUE INDEX refs_by_seq ON refs (client, seq);
            INSERT INTO refs VALUES ('alice', 'old', 't', 1, '{"ref":"old"}', 7);
            ALTER TABLE log DROP COLUMN origin_name;
            ALTER TABLE log DROP COLUMN origin_user;
            DROP TABLE meta;
            PRAGMA user_version = 1;
            """)
        let readOnly = assertThrows(.foreign) { try SQLiteTableStore.open(in: directory) { $0.readOnly = true } }
        XCTAssertTrue(
            readOnly?.message.contains("read-write once to migrate") ?? false, "\(String(describing: readOnly))")

        let store = try SQLiteTableStore.open(in: directory)
        XCTAssertEqual(try store.pragma("user_version"), "\(Schema.version)")
        XCTAssertEqual(
            try store.ack(client: "alice", ref: "old"),
            StoredAck(table: "t", version: 1, ack: #"{"ref":"old"}"#, intent: ""))
        XCTAssertEqual(try store.refs(of: "alice"), ["old": StoredRef(table: "t", intent: "")])
        XCTAssertNil(
            try store.ack(client: "alice", ref: "old", principal: "p"), "old refs belong to the tokenless principal")
        var next = record("t", 2, ref: "new")
        (next.principal, next.intent) = ("p", "f1")
        try store.commit([next, record("t", 3, ref: "newer")])
        XCTAssertEqual(try store.refs(of: "alice", principal: "p"), ["new": StoredRef(table: "t", intent: "f1")])
        XCTAssertEqual(try store.connection.firstRow("SELECT seq FROM refs WHERE ref = 'newer'") { $0.int64(at: 0) }, 8)
        XCTAssertEqual(try store.table("t")?.version, 3)
    }

    /// A copy of the file (here `cp`) is another database: its first open gives every table a new epoch, and the
    /// refs follow their table's life (so a retry there is still a retry); a ref of an older life of the name
    /// stays apart. Reopening the file, or the copy, keeps its epochs.
    func testACopyOfTheFileGetsNewEpochsOnceAndARestartKeepsThem() throws {
        let directory = try makeTemporaryDirectory(for: self)
        do {
            let store = try SQLiteTableStore.open(in: directory)
            try store.createTestTable("t", epoch: 5)
            var retried = record("t", 1, ref: "r1")
            retried.epoch = 5
            var older = record("t", 2, ref: "r0")
            older.epoch = 4
            try store.commit([retried, older])
            try store.close()
        }
        let reopened = try SQLiteTableStore.open(in: directory)
        XCTAssertEqual(try reopened.table("t")?.epoch, 5, "a restart keeps epochs")
        try reopened.close()

        try FileManager.default.copyItem(
            at: directory.appendingPathComponent("tablecast.db"), to: directory.appendingPathComponent("copy.db"))
        let copy = try SQLiteTableStore.open(in: directory, name: "copy.db")
        let renewed = try XCTUnwrap(try copy.table("t")?.epoch)
        XCTAssertNotEqual(renewed, 5)
        XCTAssertEqual(try copy.ack(client: "alice", ref: "r1")?.epoch, renewed)
        XCTAssertEqual(
            try copy.refs(of: "alice"),
            [
                "r1": StoredRef(table: "t", epoch: renewed, intent: ""),
                "r0": StoredRef(table: "t", epoch: 4, intent: ""),
            ])
        try copy.close()
        XCTAssertEqual(try SQLiteTableStore.open(in: directory, name: "copy.db").table("t")?.epoch, renewed)
        XCTAssertEqual(try SQLiteTableStore.open(in: directory).table("t")?.epoch, 5)
        // The README's way to renew by hand (after a snapshot rolled back in place): forget the identity.
        let original = directory.appendingPathComponent("tablecast.db").path
        try SQLiteConnection(path: original).execute("DELETE FROM meta WHERE key = 'identity'")
        XCTAssertNotEqual(try SQLiteTableStore.open(in: directory).table("t")?.epoch, 5)
    }

    /// `backup` gives its copy new epochs itself, and the copy keeps them when it is first served (opened).
    func testABackupHasNewEpochsThatItsFirstOpenKeeps() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let source = directory.appendingPathComponent("tablecast.db").path
        let destination = directory.appendingPathComponent("backup.db").path
        do {
            let store = try SQLiteTableStore.open(in: directory)
            try store.createTestTable("t", epoch: 5)
            try store.close()
        }
        let report = try SQLiteTableStore.backup(from: source, to: destination)
        XCTAssertEqual(report.tables.map(\.name), ["t"])
        let backedUp = try XCTUnwrap(report.tables.first?.epoch)
        XCTAssertNotEqual(backedUp, 5)
        XCTAssertEqual(try SQLiteTableStore(path: destination).table("t")?.epoch, backedUp)
    }

    func testOurMarkWithoutOurTablesIsForeign() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let path = directory.appendingPathComponent("tablecast.db").path
        try SQLiteConnection(path: path).execute(
            "PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = \(Schema.version); CREATE TABLE log (x)"
        )
        let error = assertThrows(.foreign) { try SQLiteTableStore.open(in: directory) }
        XCTAssertTrue(error?.message.contains("lacks tables") ?? false, "\(String(describing: error))")
    }

    func testADamagedPageIsCorrupt() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let file = directory.appendingPathComponent("tablecast.db")
        do {
            let store = try SQLiteTableStore.open(in: directory) { $0.retention = .keepAll }
            try store.createTestTable("t")
            try store.commit((1...400).map { record("t", Int64($0), ref: "r\($0)") })
            try store.close()
        }
        var bytes = try Data(contentsOf: file)
        let pageSize = 4096
        XCTAssertGreaterThan(bytes.count, 8 * pageSize)
        // Scribble over the b-tree header and cell pointers of a page in the middle of the file.
        let page = (bytes.count / pageSize / 2) * pageSize
        bytes.replaceSubrange(page..<page + 64, with: [UInt8](repeating: 0xA5, count: 64))
        try bytes.write(to: file)

        let error = assertThrows(.corrupt) { try SQLiteTableStore.open(in: directory) }
        XCTAssertTrue(error?.message.contains(file.path) ?? false, "\(String(describing: error))")
        XCTAssertEqual(try Data(contentsOf: file), bytes)
    }

    func testAnEmptyFileBecomesAStore() throws {
        let directory = try makeTemporaryDirectory(for: self)
        _ = FileManager.default.createFile(
            atPath: directory.appendingPathComponent("tablecast.db").path, contents: Data())
        let store = try SQLiteTableStore.open(in: directory)
        XCTAssertEqual(try store.pragma("application_id"), "\(Schema.applicationID)")
    }

    func testAMissingFileCannotBeOpenedReadOnly() throws {
        let directory = try makeTemporaryDirectory(for: self)
        assertThrows(.io) { try SQLiteTableStore.open(in: directory) { $0.readOnly = true } }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [])
    }
}
