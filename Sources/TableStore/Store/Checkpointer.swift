import Dispatch
import Synchronization

/// Copies the WAL back into the database file on a queue of its own, through a connection of its own, so that
/// the copy and its fsync run beside commits instead of stalling the commit that crosses the threshold.
///
/// Passive checkpoints never wait for the writer, and the writer never waits for them: WAL mode lets both
/// proceed at once. `Sendable` because its only mutable state is in a `Mutex` and an `Atomic`.
final class Checkpointer: Sendable {
    private let queue = DispatchQueue(label: "SQLiteTableStore.Checkpointer")
    /// Used only on `queue` or by `stop`; nil once stopped.
    private let connection: Mutex<SQLiteConnection?>
    /// Requests made while a checkpoint is queued fold into it.
    private let isScheduled = Atomic(false)
    private let failure = Mutex<StoreError?>(nil)
    private let path: String

    init(path: String, busyTimeout: Duration) throws {
        self.path = path
        let connection = try SQLiteConnection(path: path, flags: [.readWrite], busyTimeout: busyTimeout)
        // A connection learns that the file is in WAL mode on its first read; until then checkpoints do nothing.
        try connection.execute("SELECT count(*) FROM sqlite_schema")
        self.connection = Mutex(connection)
    }

    /// Schedules a passive checkpoint unless one is already waiting to run.
    func request() {
        guard !isScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            isScheduled.store(false, ordering: .releasing)
            connection.withLock { connection in
                let outcome: StoreError?
                do throws(SQLiteError) {
                    try connection?.checkpoint(.passive)
                    outcome = nil
                } catch {
                    outcome = StoreError(error, while: "background checkpoint of \(path)")
                }
                failure.withLock { $0 = outcome }
            }
        }
    }

    /// Why the latest checkpoint failed, or nil when it succeeded.
    var lastFailure: StoreError? { failure.withLock { $0 } }

    /// Returns once every requested checkpoint has run.
    func waitUntilIdle() {
        queue.sync {}
    }

    /// Waits for a running checkpoint, closes the connection and turns later requests into no-ops.
    func stop() {
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }
}
