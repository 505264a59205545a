/// The durable home of every table: metadata, an append-only log of committed batches, periodic snapshots and
/// idempotency refs, in one SQLite file in WAL mode.
///
/// Start-up cost stays flat as history grows: `load` returns the latest snapshot plus the log after it, and
/// commits that carry a snapshot prune what the retention policy no longer needs.
///
/// One owner at a time: the server drives the store from its single committer (an actor or a thread), which
/// is what group commit needs anyway. The class is therefore deliberately not `Sendable` (see the unavailable
/// conformance below); move it into its owner with `sending` or create it there.
public final class SQLiteTableStore {
    /// The database file.
    public let path: String
    /// The options it was opened with.
    public let options: TableStoreOptions
    /// Internal so tests can inspect pragmas and impose limits such as `max_page_count`.
    let connection: SQLiteConnection
    private var isClosed = false
    /// Each client's latest ref sequence number, as committed: saves a lookup per ref in the commit path.
    /// Emptied when a commit rolls back and when it grows past `refSequenceCacheLimit` clients.
    var refSequences: [RefClient: Int64] = [:]
    static let refSequenceCacheLimit = 65_536
    /// A client within its principal, whose refs are numbered in sequence.
    struct RefClient: Hashable {
        var principal: String
        var client: String
    }
    /// Runs checkpoints beside commits when `options.backgroundCheckpoint` is on.
    private(set) var checkpointer: Checkpointer?
    /// Pages in the WAL after the latest commit, as SQLite's WAL hook reports them.
    private var walPages: Int32 = 0
    /// `walPages` when the latest background checkpoint was requested.
    private var checkpointRequestedAt: Int32 = 0
    /// Why the latest fallback checkpoint (see `checkpointIfNeeded`) failed; cleared once the WAL starts over.
    private var fallbackCheckpointFailure: StoreError?

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
            checkpointer = try perform("opening \(path) for checkpoints") { try scheduleCheckpoints() }
        } catch {
            // Close without the checkpoint `close()` would run: a file that failed validation is left untouched.
            isClosed = true
            connection.close()
            throw error
        }
    }

    /// Why the latest checkpoint failed (the committing connection's fallback, else the background one), or nil
    /// when they succeeded or none ran. Commits are unaffected, but the WAL grows until checkpoints succeed again
    /// (the server should log it).
    public var checkpointFailure: StoreError? { fallbackCheckpointFailure ?? checkpointer?.lastFailure }

    deinit {
        try? close()
    }

    /// Checkpoints the WAL into the database file and truncates it, then closes. Later calls fail; closing twice
    /// is a no-op.
    public func close() throws {
        guard !isClosed else { return }
        isClosed = true
        checkpointer?.stop()
        defer { connection.close() }
        if !options.readOnly {
            _ = try perform("checkpointing \(path)") { try connection.checkpoint(.truncate) }
        }
    }

    /// Hands checkpoints to a background `Checkpointer`, or leaves them to SQLite's automatic checkpoint.
    private func scheduleCheckpoints() throws -> Checkpointer? {
        guard !options.readOnly else { return nil }
        guard options.backgroundCheckpoint else {
            try connection.execute("PRAGMA wal_autocheckpoint = \(options.checkpointPages)")
            return nil
        }
        // Only note the size here: the hook runs inside COMMIT, while this connection still holds its read lock,
        // and a checkpoint started then could not copy the commit's frames.
        connection.onWALCommit { [unowned self] pages in walPages = pages }
        return try Checkpointer(path: path, busyTimeout: options.busyTimeout)
    }

    /// After a commit: asks the background for a checkpoint per `checkpointPages` new WAL pages, or checkpoints
    /// here when it has fallen far behind.
    ///
    /// The WAL starts over only once a checkpoint has copied all of it, which commits landing during the copy
    /// prevent; hence one request per threshold of growth rather than one per commit above it, and the fallback.
    func checkpointIfNeeded() {
        guard let checkpointer else { return }
        let threshold = options.checkpointPages
        if walPages < checkpointRequestedAt {
            // The WAL started over, so a checkpoint got through.
            checkpointRequestedAt = 0
            fallbackCheckpointFailure = nil
        }
        if walPages >= threshold * 10 {
            // A failure leaves the WAL to grow, as SQLite's own automatic checkpoint would; it is reported through
            // `checkpointFailure` rather than failing the commit that already succeeded.
            do throws(SQLiteError) {
                _ = try connection.checkpoint(.restart)
                fallbackCheckpointFailure = nil
            } catch {
                fallbackCheckpointFailure = StoreError(
                    error, while: "checkpoint of \(path) by the committing connection")
            }
            checkpointRequestedAt = 0
        } else if walPages >= checkpointRequestedAt + threshold {
            checkpointRequestedAt = walPages
            checkpointer.request()
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
        // SQLite quietly opens a file it may not write read-only; every commit would then fail.
        guard options.readOnly || !connection.isReadOnly else {
            throw StoreError(.readOnly, "\(path) is read-only: the server could not store anything in it")
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
        } else if userVersion < Int64(Schema.version) {
            try migrate(from: userVersion)
        }
        if !options.readOnly { try renewEpochsIfCopied() }
    }

    /// Brings a file of an older schema version to the current one, one version per transaction.
    private func migrate(from version: Int64) throws {
        guard !options.readOnly else {
            throw StoreError(
                .foreign,
                "\(path) has Tablecast schema version \(version); open it read-write once to migrate it to \(Schema.version)"
            )
        }
        for from in version..<Int64(Schema.version) {
            try transaction("migrating \(path) from schema version \(from)") {
                try connection.execute(Schema.migrations[from]!)
            }
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
        guard userVersion == Int64(Schema.version) || Schema.migrations[userVersion] != nil else {
            throw StoreError(
                .foreign,
                "\(path) has Tablecast schema version \(userVersion); this build knows version \(Schema.version)")
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
        try connection.prepare("PRAGMA \(name)").firstRow { $0.int64(at: 0) } ?? 0
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

@available(
    *, unavailable, message: "SQLiteTableStore has one owner at a time: keep it inside the committer that drives it"
)
extension SQLiteTableStore: Sendable {}
