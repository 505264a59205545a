/// What the server needs of a store, whichever engine keeps it: ``SQLiteTableStore`` (an embedded SQLite file, the
/// default) or ``PostgresTableStore`` (one PostgreSQL database that several server nodes share).
///
/// One owner at a time, like both implementations: the server's committer thread.
public protocol TableStorage: AnyObject {
    /// Where the data lives, for log lines and messages (a file path, or a URL without its password).
    var location: String { get }
    /// Whether other processes commit to the same tables (a shared database): versions may then advance under
    /// the server, and a commit may fail with `.conflict` because another node committed first.
    var isShared: Bool { get }

    /// Writes a group of records, possibly for several tables, in one transaction: all of them or none. Records of
    /// one table follow each other in version order, the first one the table's current version + 1; otherwise
    /// `.conflict` (or `.noSuchTable`). A shared store then reserves the table for this store's next commit of it
    /// (other nodes' commits of it wait), so that the group rebased on the versions it missed commits.
    func commit(_ records: [CommitRecord]) throws
    /// Ends the reservation a `.conflict` of table `name` took, when there is nothing to commit after all (every
    /// intent of the rebased group was refused or changed nothing).
    func release(_ name: String)
    /// Ends reservations whose commit never came (called when the store is idle).
    func releaseExpiredReservations()
    /// Creates table `name` at version 0 with its initial snapshot; `.tableExists` when it exists.
    func createTable(_ name: String, epoch: Int64, rules: String, snapshot: String, created: Int64) throws
    /// Drops table `name` with its log and snapshots (refs stay); `.noSuchTable` when it does not exist.
    func dropTable(_ name: String) throws
    /// Replaces the rules of table `name` (outside any version) with `change` of the stored ones, read and written
    /// in one transaction, so that a change another node made meanwhile is not lost; returns the rules stored.
    /// `.noSuchTable` when it does not exist.
    func updateRules(of name: String, _ change: (String) throws -> String) throws -> String
    /// Every table, ordered by name.
    func listTables() throws -> [TableInfo]
    /// Table `name`'s metadata, or nil when it does not exist.
    func table(_ name: String) throws -> TableInfo?
    /// The latest snapshot of table `name` and up to `logLimit` entries of the log after it, consistent with its
    /// metadata (the rest follows with ``logEntries(_:after:limit:)``).
    func load(_ name: String, logLimit: Int) throws -> LoadedTable
    /// Up to `limit` log entries of table `name` after `version`, in version order.
    func logEntries(_ name: String, after version: Int64, limit: Int) throws -> [LogEntry]
    /// The ack stored for (principal, client, ref), with the table and intent fingerprint it was stored for, or nil.
    func ack(client: String, ref: String, principal: String) throws -> StoredAck?
    /// The refs of `client`'s (of `principal`) committed intents that are still kept, with what each was used for.
    func refs(of client: String, principal: String) throws -> [String: StoredRef]
    /// Up to `limit` kept log entries of table `name` with versions in `from...to`, newest or oldest first, with
    /// the table's oldest kept version; the entries end one after those whose batches reach `byteLimit` bytes (that
    /// one tells the caller where the next page starts). Throws `.noSuchTable`.
    func history(_ name: String, from: Int64, to: Int64, limit: Int, byteLimit: Int, newestFirst: Bool) throws
        -> HistoryPage
    /// The nearest snapshot of table `name` at or below `version` and the log from it up to `version`. Throws
    /// `.noSuchTable`.
    func state(_ name: String, at version: Int64) throws -> HistoricalState
    /// Why the latest background checkpoint failed (SQLite's WAL), or nil; commits are unaffected.
    /// Prunes every table's log down to what the retention options keep; the number of entries removed.
    func compactAll() throws -> Int64
    var checkpointFailure: StoreError? { get }
    /// Finishes with the store (SQLite checkpoints its WAL); later calls fail.
    func close() throws
}

extension TableStorage {
    /// The latest snapshot of table `name` and the whole log after it, consistent with its metadata.
    public func load(_ name: String) throws -> LoadedTable {
        try load(name, logLimit: .max)
    }

    /// Up to `limit` kept log entries of table `name` with versions in `from...to`, whatever their size.
    public func history(_ name: String, from: Int64, to: Int64, limit: Int, newestFirst: Bool) throws -> HistoryPage {
        try history(name, from: from, to: to, limit: limit, byteLimit: .max, newestFirst: newestFirst)
    }

    /// Every log entry of table `name` after `version`.
    public func logEntries(_ name: String, after version: Int64) throws -> [LogEntry] {
        try logEntries(name, after: version, limit: .max)
    }
}

extension SQLiteTableStore: TableStorage {
    public var location: String { path }
    public var isShared: Bool { false }
    /// Nothing is reserved: nobody else commits to the file.
    public func release(_ name: String) {}
    public func releaseExpiredReservations() {}
}
