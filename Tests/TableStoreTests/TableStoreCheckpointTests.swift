import Foundation
import XCTest

@testable import TableStore

final class TableStoreCheckpointTests: XCTestCase {
    func testBackgroundCheckpointsCopyTheWALAndLetItStartOver() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let store = try SQLiteTableStore.open(in: directory) { $0.checkpointPages = 20 }
        try store.createTestTable("t")
        let checkpointer = try XCTUnwrap(store.checkpointer)
        let database = directory.appendingPathComponent("tablecast.db").path
        let wal = database + "-wal"
        let sizeBefore = try fileSize(database)

        var group = records("t", 1...8)
        for index in group.indices { group[index].batch = String(repeating: "b", count: 2000) }
        for round in Int64(0)..<100 {
            try store.commit(
                group.map { record in
                    var record = record
                    record.version += round * 8
                    record.originRef = "r\(record.version)"
                    return record
                })
            checkpointer.waitUntilIdle()
        }

        XCTAssertNil(store.checkpointFailure)
        // 1.6 MB of batches went through a WAL that never held much more than its threshold.
        XCTAssertGreaterThan(try fileSize(database), sizeBefore + 1_600_000)
        XCTAssertLessThan(try fileSize(wal), 3 * 20 * 4096 + 100_000)
        XCTAssertEqual(try store.load("t").log.count, 800)
    }

    func testInlineCheckpointsUseSQLitesAutomaticCheckpoint() throws {
        let store = try SQLiteTableStore.open(in: makeTemporaryDirectory(for: self)) {
            $0.backgroundCheckpoint = false
            $0.checkpointPages = 123
        }
        XCTAssertNil(store.checkpointer)
        XCTAssertEqual(try store.pragma("wal_autocheckpoint"), "123")
    }

    private func fileSize(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
    }
}
