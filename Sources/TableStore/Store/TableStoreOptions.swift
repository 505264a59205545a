/// How a `SQLiteTableStore` opens its file and bounds what it keeps.
public struct TableStoreOptions: Sendable {
    /// `PRAGMA synchronous` in WAL mode.
    public enum Synchronous: String, Sendable {
        /// Every commit is fsync'd before it returns: durable across power loss.
        case full = "FULL"
        /// The WAL is fsync'd only at checkpoints: a commit survives a crash of the process, but the last ones may be
        /// lost on power loss. Faster.
        case normal = "NORMAL"
    }

    /// How much of the log to keep once a snapshot covers it.
    public enum LogRetention: Sendable, Equatable {
        /// Never prune the log.
        case keepAll
        /// Keep the `count` versions up to and including the latest snapshot's (so subscribers up to `count` versions
        /// behind it can still catch up from the log), drop older entries and older snapshots.
        case versionsBeforeSnapshot(Int64)
    }

    /// Durability of each commit. Default `.full`.
    public var synchronous: Synchronous = .full
    /// How long to wait for another process's lock before failing with `.busy`.
    public var busyTimeout: Duration = .seconds(5)
    /// How often the server should store a snapshot, in versions. The store only records the setting: the server,
    /// which owns the table model, encodes the snapshot and passes it with the record whose version is a multiple.
    public var snapshotInterval: Int64 = 1000
    /// What `compact` keeps, and what commits carrying a snapshot keep when `autoCompact` is on.
    public var retention: LogRetention = .versionsBeforeSnapshot(1000)
    /// How much history stays readable (``SQLiteTableStore/history(_:from:to:limit:newestFirst:)``,
    /// ``SQLiteTableStore/state(_:at:)``). Nil: none beyond the latest snapshot, and older snapshots are dropped. With a
    /// retention, pruning keeps what it or `retention` asks for, and every snapshot from the one at or below the
    /// oldest kept version on.
    public var history: HistoryRetention?
    /// Prune a table's log in the same transaction as each commit that stores a snapshot of it, so the log stays
    /// bounded without a separate `compact`.
    public var autoCompact = true
    /// Idempotency refs kept per client at least. Older ones are pruned as new ones are stored, in steps of 1/64th
    /// of this number, so a client holds up to 1/64th more.
    public var refsPerClient: Int64 = 10_000
    /// WAL size, in pages, at which a checkpoint copies the WAL back into the database file so the WAL can start
    /// over. SQLite's default is 1,000 pages (4 MiB).
    public var checkpointPages: Int32 = 1000
    /// Run checkpoints on a background queue with a connection of their own instead of inside the commit that
    /// crosses `checkpointPages`, which would stall it for the copy and its fsync. Should the background fall
    /// behind by 10× `checkpointPages`, the committing connection checkpoints itself.
    public var backgroundCheckpoint = true
    /// Open for reading only (`SQLITE_OPEN_READONLY`): every write fails with `.readOnly`. The file must exist
    /// and already hold a Tablecast schema.
    public var readOnly = false
    /// Run `PRAGMA quick_check` on open. It reads the whole file, so start-up cost grows with the file's size.
    public var checkIntegrityOnOpen = true

    public init() {}
}
