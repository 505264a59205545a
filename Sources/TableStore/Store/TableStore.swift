/// The durable home of every table: metadata, an append-only log of committed batches, periodic snapshots and
/// idempotency refs, in one SQLite file in WAL mode.
///
/// Start-up cost stays flat as history grows: `load` returns the latest snapshot plus the log after it, and
/// commits that carry a snapshot prune what the retention policy no longer needs.
///
/// One owner at a time: the server drives the store from its single committer (an actor or a thread), which
/// is what group commit needs anyway. The class is therefore deliberately not `Sendable` (see the unavailable
/// conformance below); move it into its owner with `sending` or create it there.
public final class TableStore {
    /// The database file.
    public let path: String
    /// The options it was opened with.
    public let options: TableStoreOptions
    /// Internal so tests can inspect pragmas and impose limits such as `max_page_count`.
    let connection: SQLiteConnection
    private var isClosed = false
    /// Each client's latest ref sequence number, as committed: saves a lookup per ref in the commit path.
    /// Restored when a commit rolls back; emptied when it grows past `refSequenceCacheLimit` clients.
    var refSequences: [String: Int64] = [:]
    static let refSequenceCacheLimit = 65_536

    /// Opens the store at `path`, creating the file and schema when it does not exist or is empty.
    ///
    /// An existing file is never silently replaced: garbage throws `.notADatabase`, another application's or an
    /// unknown schema throws `.foreign`, a damaged file throws `.corrupt`, each naming the file.
    public init(path: String, options: TableStoreOptions = .init()) throws {
        self.path = path
        self.options = options
        let flags: SQLiteConnection.OpenFlags = options.readOnly ? [.readOnly] : [.readWrite, .create]
        do {
            connection = try SQLiteConnection(path: path, flags: flags, busyTimeout: options.busyTimeout)
        } catch let error as SQLiteError {
            throw StoreError(error, while: "opening \(path)")
        }
        do {
            try perform("opening \(path)") { try open() }
        } catch {
            // Close without the checkpoint `close()` would run: a file that failed validation is left untouched.
            isClosed = true
            connection.close()
            throw error
        }
    }

    deinit {
        try? close()
    }

    /// Checkpoints the WAL into the database file and truncates it, then closes. Later calls fail; closing twice
    /// is a no-op.
    public func close() throws {
        guard !isClosed else { return }
        isClosed = true
        defer { connection.close() }
        if !options.readOnly {
            try perform("checkpointing \(path)") { try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        }
    }

    /// Validates an existing file before anything writes to it, then sets the journal and creates the schema if
    /// the file is new. Validation comes first because even `journal_mode = WAL` rewrites the header.
    private func open() throws {
        let applicationID = try pragmaInteger("application_id")
        let userVersion = try pragmaInteger("user_version")
        let tables = Set(
            try connection.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
                $0.text(at: 0)
            })
        let isEmpty = applicationID == 0 && userVersion == 0 && tables.isEmpty
        if isEmpty {
            guard !options.readOnly else {
                throw StoreError(.foreign, "\(path) holds no Tablecast schema; it cannot be created read-only")
            }
        } else {
            try checkOurs(applicationID: applicationID, userVersion: userVersion, tables: tables)
            if options.checkIntegrityOnOpen { try checkIntegrity() }
        }
        if !options.readOnly {
            let mode = try connection.firstRow("PRAGMA journal_mode = WAL") { $0.text(at: 0) }
            guard mode?.lowercased() == "wal" else {
                throw StoreError(.internal, "\(path) refused WAL journal mode (it stayed \(mode ?? "unknown"))")
            }
        }
        try connection.execute("PRAGMA synchronous = \(options.synchronous.rawValue)")
        if isEmpty {
            try transaction("creating the schema in \(path)") { try connection.execute(Schema.script) }
        }
    }

    private func checkOurs(applicationID: Int64, userVersion: Int64, tables: Set<String>) throws {
        guard applicationID == Int64(Schema.applicationID) else {
            let detail =
                applicationID == 0
                ? "it has no application_id and holds tables \(tables.sorted().joined(separator: ", "))"
                : "its application_id is \(applicationID), not Tablecast's \(Schema.applicationID)"
            throw StoreError(.foreign, "\(path) is a SQLite database of another application: \(detail)")
        }
        guard userVersion == Int64(Schema.version) else {
            throw StoreError(
                .foreign, "\(path) has Tablecast schema version \(userVersion); this build knows version \(Schema.version)")
        }
        let missing = Schema.tableNames.subtracting(tables)
        guard missing.isEmpty else {
            throw StoreError(
                .foreign, "\(path) is marked as Tablecast but lacks tables \(missing.sorted().joined(separator: ", "))")
        }
    }

    private func checkIntegrity() throws {
        let problems = try connection.rows("PRAGMA quick_check(5)") { $0.text(at: 0) }
        guard problems == ["ok"] else {
            throw StoreError(.corrupt, "\(path) failed its integrity check: \(problems.joined(separator: "; "))")
        }
    }

    private func pragmaInteger(_ name: String) throws -> Int64 {
        try connection.firstRow("PRAGMA \(name)") { $0.int64(at: 0) } ?? 0
    }

    // MARK: Helpers shared by the operations

    /// Runs `body` in a write transaction taken at once (`BEGIN IMMEDIATE`, so a busy database fails here rather
    /// than halfway), commits it, and on any failure rolls back (unless SQLite already did) and throws a
    /// `StoreError` that names `context`.
    func transaction<T>(_ context: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
        try perform(context()) {
            do {
                try connection.run("BEGIN IMMEDIATE")
                let result = try body()
                try connection.run("COMMIT")
                return result
            } catch {
                if connection.isInTransaction { try? connection.run("ROLLBACK") }
                throw error
            }
        }
    }

    /// Runs `body` in a read transaction, so that several statements see one consistent state.
    func read<T>(_ context: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
        try perform(context()) {
            try connection.run("BEGIN")
            defer { try? connection.run("COMMIT") }
            return try body()
        }
    }

    /// Runs `body`, turning a SQLite failure into a classified `StoreError` that names `context`.
    func perform<T>(_ context: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw StoreError(error, while: context())
        }
    }
}

@available(*, unavailable, message: "TableStore has one owner at a time: keep it inside the committer that drives it")
extension TableStore: Sendable {}
