import Dispatch
import Foundation
import Synchronization
import TablecastTesting
import XCTest

@testable import TableStore

/// The PostgreSQL store against a real throwaway cluster (the tests fail when PostgreSQL cannot start).
final class PostgresTableStoreTests: XCTestCase {
    private func freshStore(_ configure: (inout TableStoreOptions) -> Void = { _ in }) throws -> (
        PostgresTableStore, String
    ) {
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

    /// A copy of the database (here created from it as a template, as a restored dump would be) gets new epochs on
    /// its first open, and its refs follow their table's life; the original, reopened, keeps its epochs.
    func testACopyOfTheDatabaseGetsNewEpochsOnce() throws {
        let (store, url) = try freshStore()
        try store.createTable("a", epoch: 7, rules: "{}", snapshot: "{\"v\":0}", created: 1)
        var retried = record("a", 1, ref: "r1")
        retried.epoch = 7
        try store.commit([retried])
        try store.close()
        let original = String(url.split(separator: "/").last!)
        let copyName = original + "_copy"
        // A template must have no other session.
        try PostgresCluster.shared().psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(original)' AND pid <> pg_backend_pid()"
        )
        try PostgresCluster.shared().psql("CREATE DATABASE \(copyName) TEMPLATE \(original)")
        let copyURL = url.replacingOccurrences(of: "/" + original, with: "/" + copyName)
        let copy = try PostgresTableStore(url: copyURL)
        let renewed = try XCTUnwrap(try copy.table("a")?.epoch)
        XCTAssertNotEqual(renewed, 7)
        XCTAssertEqual(try copy.ack(client: "alice", ref: "r1")?.epoch, renewed)
        XCTAssertEqual(try PostgresTableStore(url: copyURL).table("a")?.epoch, renewed)
        XCTAssertEqual(try PostgresTableStore(url: url).table("a")?.epoch, 7)
    }

    func testRefusesAnUnknownSchemaVersion() throws {
        let (_, url) = try freshStore()
        let database = String(url.split(separator: "/").last!)
        try PostgresCluster.shared().psql(
            "UPDATE tablecast.meta SET value = '99' WHERE key = 'schema_version'", database: database)
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
        XCTAssertEqual(try store.refs(of: "alice").keys.sorted(), ["b1", "r\"1\\"])
    }

    func testRefsAreKeptPerPrincipalWithTheTableAndIntentTheyWereUsedFor() throws {
        let (store, _) = try freshStore()
        try store.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        var mine = record("a", 1, ref: "r1")
        (mine.principal, mine.intent) = ("p1", "f1")
        // The same client id and ref under another token is another ref, not a duplicate.
        var theirs = record("a", 2, ref: "r1")
        (theirs.principal, theirs.intent) = ("p2", "f2")
        try store.commit([mine, theirs])
        XCTAssertEqual(try store.ack(client: "alice", ref: "r1", principal: "p1")?.intent, "f1")
        XCTAssertEqual(try store.ack(client: "alice", ref: "r1", principal: "p2")?.version, 2)
        XCTAssertNil(try store.ack(client: "alice", ref: "r1", principal: ""))
        XCTAssertEqual(try store.refs(of: "alice", principal: "p2"), ["r1": StoredRef(table: "a", intent: "f2")])
        XCTAssertEqual(try store.refs(of: "alice", principal: "nobody"), [:])
    }

    func testHistoryReadsTheLogWithNamesAndRebuildsFromTheNearestSnapshot() throws {
        let (store, _) = try freshStore {
            $0.retention = .versionsBeforeSnapshot(0)
            $0.history = HistoryRetention(versions: 3)
        }
        try store.createTable("a", epoch: 1, rules: "{}", snapshot: "{\"at\":0}", created: 1)
        var named = records("a", 1...6)
        for index in named.indices { named[index].originName = "Alice \(index + 1)" }
        named[1].snapshot = "{\"at\":2}"
        named[3].snapshot = "{\"at\":4}"
        named[5].snapshot = "{\"at\":6}"
        try store.commit(named)
        // Three versions back from 6 is 3, whose nearest snapshot at or below is 2: the log after it stays.
        let page = try store.history("a", from: 0, to: .max, limit: 10, newestFirst: true)
        XCTAssertEqual(page.oldest, 2)
        XCTAssertEqual(page.info.version, 6)
        XCTAssertEqual(page.entries.map(\.version), [6, 5, 4, 3])
        XCTAssertEqual(page.entries.first?.originName, "Alice 6")
        XCTAssertEqual(try store.history("a", from: 4, to: 5, limit: 1, newestFirst: false).entries.map(\.version), [4])
        // A page ends one entry after those whose batches reach the byte bound.
        let first = page.entries[0].batch.utf8.count
        for (byteLimit, versions) in [(1, [6, 5]), (first, [6, 5]), (first + 1, [6, 5, 4])] as [(Int, [Int64])] {
            let bounded = try store.history("a", from: 0, to: .max, limit: 10, byteLimit: byteLimit, newestFirst: true)
            XCTAssertEqual(bounded.entries.map(\.version), versions, "byteLimit \(byteLimit)")
        }
        let past = try store.state("a", at: 3)
        XCTAssertEqual(past.snapshot, Snapshot(version: 2, body: "{\"at\":2}"))
        XCTAssertEqual(past.log.map(\.version), [3])
        XCTAssertNil(try store.state("a", at: 1).snapshot)
        XCTAssertNil(try store.state("a", at: 7).snapshot)
        assertThrows(.noSuchTable) { try store.history("b", from: 0, to: 1, limit: 1, newestFirst: true) }
    }

    func testMigratesADatabaseOfSchemaVersion1() throws {
        let url = try PostgresCluster.shared().createDatabase(prefix: "store")
        let database = String(url.split(separator: "/").last!)
        try PostgresCluster.shared().psql(
            """
            CREATE SCHEMA tablecast;
            CREATE TABLE tablecast.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE tablecast.tables (
                name TEXT PRIMARY KEY, epoch BIGINT NOT NULL, rules TEXT NOT NULL, created BIGINT NOT NULL,
                version BIGINT NOT NULL);
            CREATE TABLE tablecast.log (
                table_name TEXT NOT NULL, version BIGINT NOT NULL, batch TEXT NOT NULL, origin_client TEXT NOT NULL,
                origin_ref TEXT, time BIGINT NOT NULL, PRIMARY KEY (table_name, version));
            CREATE TABLE tablecast.snapshots (
                table_name TEXT NOT NULL, version BIGINT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (table_name, version));
            CREATE TABLE tablecast.refs (
                client TEXT NOT NULL, ref TEXT NOT NULL, table_name TEXT NOT NULL, version BIGINT NOT NULL,
                ack TEXT NOT NULL, seq BIGSERIAL NOT NULL, PRIMARY KEY (client, ref));
            CREATE INDEX refs_by_seq ON tablecast.refs (client, seq);
            CREATE UNLOGGED TABLE tablecast.nodes (node TEXT PRIMARY KEY, seen BIGINT NOT NULL);
            CREATE UNLOGGED TABLE tablecast.presence (
                node TEXT NOT NULL, table_name TEXT NOT NULL, clients TEXT NOT NULL, PRIMARY KEY (node, table_name));
            INSERT INTO tablecast.meta VALUES ('schema_version', '1');
            INSERT INTO tablecast.tables VALUES ('a', 1, '{}', 1, 1);
            INSERT INTO tablecast.snapshots VALUES ('a', 0, '{}');
            INSERT INTO tablecast.log VALUES ('a', 1, '{}', 'alice', 'old', 5);
            INSERT INTO tablecast.refs (client, ref, table_name, version, ack) VALUES ('alice', 'old', 'a', 1, '{"v":1}');
            """, database: database)
        let store = try PostgresTableStore(url: url)
        // Refs stored before were the tokenless principal's, with no intent; log entries have no name.
        XCTAssertEqual(
            try store.ack(client: "alice", ref: "old", principal: ""),
            StoredAck(table: "a", version: 1, ack: "{\"v\":1}"))
        XCTAssertEqual(try store.load("a").log.first?.originName, "")
        var next = record("a", 2, ref: "old")
        next.principal = "p1"
        next.originUser = "ana"
        try store.commit([next])
        XCTAssertEqual(try store.table("a")?.version, 2)
        XCTAssertEqual(try store.load("a").log.map(\.originUser), ["", "ana"], "stored since schema version 4")
    }

    func testASecondStoreThatFellBehindGetsAConflictAndNothingOfItsGroup() throws {
        let (first, url) = try freshStore()
        // Used by one thread at a time: the dispatched block, then this one once it is done.
        nonisolated(unsafe) let second = try PostgresTableStore(url: url)
        try first.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try first.commit(records("a", 1...2))
        // The second node also thinks version 1 comes next, and its group also touches table b: all or nothing.
        try first.createTable("b", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        assertThrows(.conflict) { try second.commit([record("b", 1), record("a", 1), record("a", 2)]) }
        XCTAssertEqual(try second.table("b")?.version, 0)
        try second.commit([record("a", 3, ref: "x")])
        XCTAssertEqual(try first.table("a")?.version, 3)
    }

    func testANodeThatLostReservesTheTableUntilItsRebasedGroupCommits() throws {
        let (first, url) = try freshStore()
        nonisolated(unsafe) let second = try PostgresTableStore(url: url)
        try first.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try first.commit(records("a", 1...2))
        // The second node loses at version 1 and reserves the table for its rebased group.
        assertThrows(.conflict) { try second.commit([record("a", 1)]) }
        // The first node's next commit now loses too, without writing, and waits for the second's rebased group
        // (committed 0.3 s later on another thread) before it says so: then it holds the reservation.
        let committed = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            do { try second.commit([record("a", 3)]) } catch { XCTFail("the reserved commit failed: \(error)") }
            committed.signal()
        }
        let start = ContinuousClock.now
        assertThrows(.conflict) { try first.commit([record("a", 3, ref: "lost")]) }
        XCTAssertGreaterThan(start.duration(to: .now), .milliseconds(250))
        committed.wait()
        XCTAssertEqual(try first.table("a")?.version, 3)
        XCTAssertNil(try first.ack(client: "alice", ref: "lost"))
        try first.commit([record("a", 4)])
        // A reservation released with nothing committed lets the other node commit at once.
        assertThrows(.conflict) { try second.commit([record("a", 4)]) }
        second.release("a")
        let quick = ContinuousClock.now
        try first.commit([record("a", 5)])
        XCTAssertLessThan(quick.duration(to: .now), .seconds(2))
        XCTAssertEqual(try second.table("a")?.version, 5)
    }

    func testAReservationOfANodeThatStoppedIsEndedAfterTwiceItsTimeout() throws {
        let (first, url) = try freshStore()
        // Every session also has the server's bounds on a silent peer and on idling in a transaction.
        let session = try PostgresConnection(url: url)
        XCTAssertEqual(try session.execute("SHOW idle_in_transaction_session_timeout").text(0, 0), "10s")
        XCTAssertEqual(try session.execute("SHOW tcp_keepalives_idle").text(0, 0), "5")
        let second = try PostgresTableStore(url: url)
        try first.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        try first.commit([record("a", 1)])
        // The second node loses, reserves the table, and then does nothing more (paused, say): it neither commits
        // nor releases, and its session stays open.
        assertThrows(.conflict) { try second.commit([record("a", 1)]) }
        let start = ContinuousClock.now
        var committed = false
        while !committed && start.duration(to: .now) < .seconds(40) {
            do {
                try first.commit([record("a", 2)])
                committed = true
            } catch let error as StoreError where error.kind == .conflict {
                // Each attempt waited up to the reservation timeout for the lock.
            }
        }
        XCTAssertTrue(committed, "the stuck reservation was never ended")
        let waited = start.duration(to: .now)
        XCTAssertGreaterThanOrEqual(waited, PostgresTableStore.reservationTimeout * 2)
        XCTAssertLessThan(waited, PostgresTableStore.reservationTimeout * 4)
        // The stopped node comes back to a closed session, reconnects, follows and commits as any other.
        var resumed = false
        while !resumed && start.duration(to: .now) < .seconds(50) {
            do {
                try second.commit([record("a", 3)])
                resumed = true
            } catch let error as StoreError where error.kind == .unreachable {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        XCTAssertTrue(resumed)
        XCTAssertEqual(try first.table("a")?.version, 3)
    }

    func testARefStoredByAnotherNodeIsAConflict() throws {
        let (first, url) = try freshStore()
        // Used by one thread at a time: the dispatched block, then this one once it is done.
        nonisolated(unsafe) let second = try PostgresTableStore(url: url)
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

    func testARulesChangeOnAnotherConnectionWaitsAndReadsTheOneBeforeIt() throws {
        let (first, url) = try freshStore()
        // Used by one thread at a time: the dispatched block, then this one once it is done.
        nonisolated(unsafe) let second = try PostgresTableStore(url: url)
        try first.createTable("a", epoch: 1, rules: "{\"x\":0}", snapshot: "{}", created: 1)
        let secondSaw = Mutex<String?>(nil)
        let secondDone = DispatchSemaphore(value: 0)
        _ = try first.updateRules(of: "a") { stored in
            // While this change holds the row, the other connection's change starts and must wait for it.
            DispatchQueue.global().async {
                _ = try? second.updateRules(of: "a") { stored in
                    secondSaw.withLock { $0 = stored }
                    return stored.replacingOccurrences(of: "}", with: ",\"y\":2}")
                }
                secondDone.signal()
            }
            Thread.sleep(forTimeInterval: 0.3)
            XCTAssertNil(secondSaw.withLock { $0 }, "the second change did not wait for the first")
            return stored.replacingOccurrences(of: "0", with: "1")
        }
        XCTAssertEqual(secondDone.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(secondSaw.withLock { $0 }, "{\"x\":1}")
        XCTAssertEqual(try first.table("a")?.rules, "{\"x\":1,\"y\":2}")
    }

    func testTablesAndRules() throws {
        let (store, _) = try freshStore()
        try store.createTable("a", epoch: 1, rules: "{}", snapshot: "{}", created: 1)
        assertThrows(.tableExists) { try store.createTable("a", epoch: 2, rules: "{}", snapshot: "{}", created: 1) }
        XCTAssertEqual(try store.updateRules(of: "a") { _ in "{\"x\":1}" }, "{\"x\":1}")
        XCTAssertEqual(try store.table("a")?.rules, "{\"x\":1}")
        try store.commit([record("a", 1)])
        try store.dropTable("a")
        assertThrows(.noSuchTable) { try store.dropTable("a") }
        assertThrows(.noSuchTable) { try store.updateRules(of: "a") { _ in "{}" } }
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
        XCTAssertTrue(url.contains("&options=-c%20idle_in_transaction_session_timeout%3D10000%20"), url)
        let keywords = PostgresConnection.withTimeouts("host=h dbname=d")
        XCTAssertTrue(keywords.hasPrefix("host=h dbname=d connect_timeout=3 "), keywords)
        XCTAssertTrue(keywords.contains(" options='-c idle_in_transaction_session_timeout=10000 "), keywords)
        XCTAssertFalse(PostgresConnection.withTimeouts("postgresql://u@h/db?options=-c%20x%3D1").contains("idle_in"))
    }

    func testRedactsThePassword() {
        XCTAssertEqual(PostgresTableStore.redacted("postgresql://u:secret@h:5432/db"), "postgresql://u:***@h:5432/db")
        XCTAssertEqual(PostgresTableStore.redacted("postgresql://u@h/db"), "postgresql://u@h/db")
    }
}
