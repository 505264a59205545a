/// Where tables are stored, as a command line or a configuration names it: a PostgreSQL database that several server
/// nodes share (`postgresql://…` or `postgres://…`), or else a SQLite file (the embedded default).
public enum StoreLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    /// The location `text` names.
    public init(_ text: String) {
        self =
            text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
            ? .postgres(url: text) : .sqlite(path: text)
    }

    /// Whether several nodes may share the store (PostgreSQL).
    public var isShared: Bool {
        if case .postgres = self { true } else { false }
    }
}

/// Opens the store at `location` with `options` (``TableStoreOptions/readOnly`` and the integrity check apply to
/// SQLite files): the one place that chooses the implementation, so that servers and commands see only
/// ``TableStorage``.
public func openStore(_ location: StoreLocation, options: TableStoreOptions = TableStoreOptions()) throws
    -> any TableStorage
{
    switch location {
    case .sqlite(let path): try SQLiteTableStore(path: path, options: options)
    case .postgres(let url): try PostgresTableStore(url: url, options: options)
    }
}

/// Copies the store at `location` into a new SQLite file at `destination` (which must not exist), consistently
/// while servers keep writing to it; restoring is starting a server on the copy.
public func backupStore(_ location: StoreLocation, to destination: String) throws -> BackupReport {
    switch location {
    case .sqlite(let path): try SQLiteTableStore.backup(from: path, to: destination)
    case .postgres(let url): try PostgresTableStore(url: url).backup(to: destination)
    }
}

/// Gives the space a compaction freed back to the file system: `VACUUM` and a truncating checkpoint of a SQLite
/// file, which needs no server running on it. PostgreSQL's autovacuum does this on its own: nothing to do there.
public func vacuumStore(_ location: StoreLocation) throws {
    guard case .sqlite(let path) = location else { return }
    let connection = try SQLiteConnection(path: path, flags: [.readWrite])
    defer { connection.close() }
    try connection.execute("VACUUM; PRAGMA wal_checkpoint(TRUNCATE)")
}
