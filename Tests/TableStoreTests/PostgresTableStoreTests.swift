import TablecastTesting
import XCTest

@testable import TableStore

/// The PostgreSQL store against a real throwaway cluster (the tests fail when PostgreSQL cannot start).
final class PostgresTableStoreTests: XCTestCase {
    private func freshStore(_ configure: (inout TableStoreOptions) -> Void = { _ in }) throws -> (PostgresTableStore, String) {
        let url = try PostgresCluster.shared().createDatabase(prefix: "store")
        var options = TableStoreOptions()
        configure(&options)
        return (try PostgresTableStore(url: url, options: options), url)
    }

    func testCreatesTheSchemaOnceAndReopens() throws {
        let (store, url) = try freshStore()
        try store.createTable("a", epoch: 7, rules: "{}", snapshot: "{\"v\":0}", created: 1)
        try store.commit(records("a", 1...3))
        let again = try PostgresTableStore(url: url)
        XCTAssertEqual(try again.listTables().map(\.name), ["a"])
        XCTAssertEqual(try again.table("a")?.version, 3)
        XCTAssertEqual(try again.table("a")?.epoch, 7)
    }

    func testRefusesAnUnknownSchemaVersion() throws {
        let (_, url) = try freshStore()
        let database = String(url.split(separator: "/").last!)
        try PostgresCluster.shared().psql("UPDATE tablecast.meta SET value = '99' WHERE key = 'schema_version'", database: database)
        let error = assertThrows(.foreign) { try PostgresTableStore(url: url) }
        XCTAssertTrue(error?.message.contains("schema version 99") ?? false, "\(String(describing: error))")
    }

    func testCommitsLoadsAndReadsTheLog() throws {
        let (store, _) = try freshStore()
        try store.createTable("a", epoch: 1, rules: "{}", snapshot: "{\"v\":0}", created: 1)
        try store.createTable("b", epoch: 2, rules: "{}", snapshot: "{\"v\":0}", created: 1)
        // One transaction across tables, with quotes and backslashes that the array literals must carry.
        var tricky = record("a", 1, ref: "r\"1\\")
        tricky.batch = "{\"x\":\"a\\\"b\\\\c, {d}\"}"
        try store.commit([tricky, record("a", 2), record("b", 1, ref: "b1")])
        let loaded = try store.load("a")
        XCTAssertEqual(loaded.info.version, 2)
        XCTAssertEqual(loaded.snapshot, Snapshot(version: 0, body: "{\"v\":0}"))
        XCTAssertEqual(loaded.log.map(\.batch), [tricky.batch, record("a", 2).batch])
        XCTAssertEqual(loaded.log.first?.originRef, "r\"1\\")
        XCTAssertNil(loaded.log.last?.originRef)
        XCTAssertEqual(try store.logEntries("a", after: 1).map(\.version), [2])
        XCTAssertEqual(try store.ack(client: "alice", ref: "r\"1\\")?.ack, tricky.ack)
        XCTAssertEqual(try store.refs(of: "alice"), ["r\"1\\", "b1"])
    }

    func testASecondStoreThatFellBehindGetsAConflictAndNothingOfItsGroup() throws {
        let (first, url) = try freshStore()
        let second = try PostgresTableStore(url: url)
        try first.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try first.commit(records("a", 1...2))
        // The second node also thinks version 1 comes next, and its group also touches table b: all or nothing.
        try first.createTable("b", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        assertThrows(.conflict) { try second.commit([record("b", 1), record("a", 1), record("a", 2)]) }
        XCTAssertEqual(try second.table("b")?.version, 0)
        try second.commit([record("a", 3, ref: "x")])
        XCTAssertEqual(try first.table("a")?.version, 3)
    }

    func testARefStoredByAnotherNodeIsAConflict() throws {
        let (first, url) = try freshStore()
        let second = try PostgresTableStore(url: url)
        try first.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try first.createTable("b", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try first.commit([record("a", 1, ref: "same")])
        assertThrows(.duplicateRef) { try second.commit([record("b", 1, ref: "same")]) }
        XCTAssertEqual(try second.table("b")?.version, 0)
    }

    func testSnapshotsPruneTheLog() throws {
        let (store, _) = try freshStore { $0.retention = .versionsBeforeSnapshot(2) }
        try store.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try store.commit(records("a", 1...4) + [record("a", 5, snapshot: "{\"at\":5}")])
        let loaded = try store.load("a")
        XCTAssertEqual(loaded.snapshot.version, 5)
        XCTAssertEqual(loaded.log, [])
        XCTAssertEqual(try store.logEntries("a", after: 0).map(\.version), [4, 5])
    }

    func testTablesAndRules() throws {
        let (store, _) = try freshStore()
        try store.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        assertThrows(.tableExists) { try store.createTable("a", epoch: 2, rules: "{}", snapshot: "{}", created: 1) }
        try store.setRules("{\"x\":1}", of: "a")
        XCTAssertEqual(try store.table("a")?.rules, "{\"x\":1}")
        try store.commit([record("a", 1)])
        try store.dropTable("a")
        assertThrows(.noSuchTable) { try store.dropTable("a") }
        assertThrows(.noSuchTable) { try store.setRules("{}", of: "a") }
        assertThrows(.noSuchTable) { try store.commit([record("a", 1)]) }
        // Re-created, the table starts over at version 0 with no log of its earlier life.
        try store.createTable("a", epoch: 3, rules: "{}", snapshot: "{}", created: 1)
        XCTAssertEqual(try store.load("a").log, [])
    }

    func testUnreachableServerFailsFastAndTheStoreReconnectsAfterARestart() throws {
        let cluster = try PostgresCluster()
        defer { try? cluster.stop() }
        let store = try PostgresTableStore(url: cluster.url())
        try store.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try cluster.kill()
        assertThrows(.unreachable) { try store.commit([record("a", 1)]) }
        XCTAssertTrue(StoreError.Kind.unreachable.isStorageFailure)
        try cluster.restart()
        // The backoff may hold off the first attempts after the restart; the store answers within seconds.
        let deadline = ContinuousClock.now + .seconds(10)
        var committed = false
        while !committed && ContinuousClock.now < deadline {
            do {
                try store.commit([record("a", 1)])
                committed = true
            } catch let error as StoreError where error.kind == .unreachable {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        XCTAssertTrue(committed)
        XCTAssertEqual(try store.table("a")?.version, 1)
    }

    func testConnectionsGetTimeoutsUnlessTheURLSetsThem() {
        let url = PostgresConnection.withTimeouts("postgresql://u@h/db?connect_timeout=9")
        XCTAssertTrue(url.hasPrefix("postgresql://u@h/db?connect_timeout=9&keepalives_idle=5&"), url)
        XCTAssertFalse(url.contains("connect_timeout=3"), url)
        XCTAssertTrue(PostgresConnection.withTimeouts("host=h dbname=d").hasPrefix("host=h dbname=d connect_timeout=3 "))
    }

    func testRedactsThePassword() {
        XCTAssertEqual(PostgresTableStore.redacted("postgresql://u:secret@h:5432/db"), "postgresql://u:***@h:5432/db")
        XCTAssertEqual(PostgresTableStore.redacted("postgresql://u@h/db"), "postgresql://u@h/db")
    }
}
