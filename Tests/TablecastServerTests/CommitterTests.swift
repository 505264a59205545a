import Foundation
import Logging
import Synchronization
import XCTest

@testable import TableStore
@testable import TablecastServer

/// The committer says what the store cannot do on its own: a failed background checkpoint and a failed final
/// close are logged, each caused here for real by another connection's locks.
final class CommitterTests: XCTestCase {
    func testAFailedCheckpointAndAFailedCloseAreLogged() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("committer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tablecast.db").path
        var options = TableStoreOptions()
        options.busyTimeout = .milliseconds(100)
        let store = try SQLiteTableStore(path: path, options: options)
        try store.createTable("t", epoch: 1, rules: "{}", snapshot: "{}", created: 0)
        try store.commit([record(1)])
        let checkpointer = try XCTUnwrap(store.checkpointer)

        // A reader on an older snapshot makes a RESTART checkpoint of another connection wait, holding the
        // checkpoint lock; the store's own background checkpoint then fails with "busy".
        let reader = try SQLiteConnection(path: path)
        try reader.run("BEGIN")
        _ = try reader.firstRow("SELECT count(*) FROM log") { $0.int64(at: 0) }
        try store.commit([record(2)])
        let restartDone = DispatchSemaphore(value: 0)
        func startRestart() {
            Thread {
                let other = try? SQLiteConnection(path: path, busyTimeout: .seconds(60))
                try? other?.execute("PRAGMA wal_checkpoint(RESTART)")
                restartDone.signal()
            }.start()
        }
        // The RESTART holds the write lock while it waits for the reader, so a writer that does not wait is
        // refused once it does. (A RESTART that meets another checkpoint gives up at once: start it again.)
        let probe = try SQLiteConnection(path: path, busyTimeout: .zero)
        startRestart()
        let giveUp = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < giveUp {
            do {
                try probe.run("BEGIN IMMEDIATE")
                try probe.run("ROLLBACK")
            } catch {
                break
            }
            if restartDone.wait(timeout: .now()) == .success { startRestart() }
            usleep(1000)
        }
        checkpointer.request()
        checkpointer.waitUntilIdle()
        XCTAssertEqual(store.checkpointFailure?.kind, .busy)
        try reader.run("COMMIT")
        restartDone.wait()

        let logs = LogRecorder()
        let committer = Committer(store: store, logger: Logger(label: "test") { _ in logs })
        try await commit(record(3), with: committer)
        // A job queued after the commit runs after the turn that committed it, and so after its checks.
        try await committer.perform { _ in }
        XCTAssertEqual(logs.messages.filter { $0.hasPrefix("a WAL checkpoint failed") }.count, 1, "\(logs.messages)")

        // Closing checkpoints with TRUNCATE, which a reader on an older snapshot keeps from finishing.
        let lateReader = try SQLiteConnection(path: path)
        try lateReader.run("BEGIN")
        _ = try lateReader.firstRow("SELECT count(*) FROM log") { $0.int64(at: 0) }
        try await commit(record(4), with: committer)
        await committer.stop()
        try lateReader.run("COMMIT")
        XCTAssertTrue(
            logs.messages.contains { $0.hasPrefix("the database could not be closed cleanly") }, "\(logs.messages)")
    }

    private func record(_ version: Int64) -> CommitRecord {
        CommitRecord(
            table: "t", version: version, batch: String(repeating: "b", count: 5000), originClient: "c", time: 0)
    }

    private func commit(_ record: CommitRecord, with committer: Committer) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            committer.submit([record]) { continuation.resume(with: $0) }
        }
    }
}
