import Foundation

extension PostgresTableStore {
    /// One moment's view of the database, read only. A big table's rows may take a while to write between two
    /// reads: the session's bound on idling in a transaction (see ``PostgresConnection/timeouts``) is lifted, as
    /// a read-only transaction holds no lock a commit needs.
    static let backupBegin =
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL idle_in_transaction_session_timeout = 0"

    /// Copies the whole store into a new SQLite file at `destination` that `tablecast serve --db FILE` opens as
    /// is: a backup, and a way to move off PostgreSQL. Everything is read in one REPEATABLE READ transaction, so
    /// the copy is the database as of one moment while the nodes keep committing. The file is written beside
    /// `destination` and installed as ``SQLiteTableStore/backup(from:to:)`` installs its copies; `destination` must
    /// not exist. The copy's tables get new epochs: a client of the nodes never resumes on it.
    public func backup(to destination: String) throws -> BackupReport {
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError(.io, "\(destination) already exists; a backup never replaces a file")
        }
        let partial = destination + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do {
            // The store creates the schema; the rows go in through one connection in one transaction.
            try SQLiteTableStore(path: partial).close()
            let copy = try SQLiteConnection(path: partial)
            defer { copy.close() }
            try copy.execute("PRAGMA journal_mode = DELETE")
            try copy.execute("BEGIN")
            try transaction("copying \(location) to \(partial)", begin: Self.backupBegin) {
                connection in try Self.copy(connection, into: copy)
            }
            try copy.execute("COMMIT")
            try SQLiteTableStore.renew(copy, at: partial)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            if let error = error as? SQLiteError { throw StoreError(error, while: "writing \(partial)") }
            throw error
        }
        return try SQLiteTableStore.install(partial, as: destination)
    }

    /// Rows read per statement from the refs, which have no table to page by.
    private static let refsPage = 10_000

    /// Inserts every table, log entry, snapshot and ref that `connection`'s transaction sees into `copy`.
    private static func copy(_ connection: PostgresConnection, into copy: SQLiteConnection) throws {
        let tables = try connection.execute("SELECT name, epoch, rules, created, version FROM tablecast.tables")
        for row in 0..<tables.count {
            let name = tables.text(row, 0)
            try copy.run(
                "INSERT INTO tables (name, epoch, rules, created, version) VALUES (?1, ?2, ?3, ?4, ?5)",
                [
                    .text(name), .integer(tables.int64(row, 1)), .text(tables.text(row, 2)),
                    .integer(tables.int64(row, 3)),
                    .integer(tables.int64(row, 4)),
                ])
            // One table's log and snapshots at a time, so that memory holds one table's rows, not the database's.
            let log = try connection.execute(
                """
                SELECT version, batch, origin_client, origin_ref, time, origin_name, origin_user FROM tablecast.log
                WHERE table_name = $1 ORDER BY version
                """, [name])
            for entry in 0..<log.count {
                try copy.run(
                    """
                    INSERT INTO log (table_name, version, batch, origin_client, origin_ref, time, origin_name, origin_user)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    """,
                    [
                        .text(name), .integer(log.int64(entry, 0)), .text(log.text(entry, 1)),
                        .text(log.text(entry, 2)),
                        SQLiteValue(log.optionalText(entry, 3)), .integer(log.int64(entry, 4)),
                        .text(log.text(entry, 5)), .text(log.text(entry, 6)),
                    ])
            }
            let snapshots = try connection.execute(
                "SELECT version, body FROM tablecast.snapshots WHERE table_name = $1 ORDER BY version", [name])
            for snapshot in 0..<snapshots.count {
                try copy.run(
                    "INSERT INTO snapshots (table_name, version, body) VALUES (?1, ?2, ?3)",
                    [.text(name), .integer(snapshots.int64(snapshot, 0)), .text(snapshots.text(snapshot, 1))])
            }
        }
        var after: Int64 = 0
        while true {
            let refs = try connection.execute(
                """
                SELECT principal, client, ref, table_name, version, seq, intent, ack, epoch FROM tablecast.refs
                WHERE seq > $1 ORDER BY seq LIMIT \(refsPage)
                """, [String(after)])
            for ref in 0..<refs.count {
                try copy.run(
                    """
                    INSERT INTO refs (principal, client, ref, table_name, version, seq, intent, ack, epoch)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                    """,
                    [
                        .text(refs.text(ref, 0)), .text(refs.text(ref, 1)), .text(refs.text(ref, 2)),
                        .text(refs.text(ref, 3)),
                        .integer(refs.int64(ref, 4)), .integer(refs.int64(ref, 5)), .text(refs.text(ref, 6)),
                        .text(refs.text(ref, 7)), .integer(refs.int64(ref, 8)),
                    ])
            }
            guard refs.count == refsPage else { return }
            after = refs.int64(refs.count - 1, 5)
        }
    }
}
