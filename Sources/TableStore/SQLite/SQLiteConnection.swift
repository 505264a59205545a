import CSQLite

/// One SQLite connection: opened with explicit flags and a busy timeout, closed when the last reference goes away.
///
/// Not `Sendable`: SQLite is opened in multi-thread mode (no per-connection mutex), which is safe as long as one
/// owner uses the connection at a time, and that is exactly what a non-`Sendable` class guarantees under Swift 6.
package final class SQLiteConnection {
    /// How to open the file (`SQLITE_OPEN_*`).
    package struct OpenFlags: OptionSet, Sendable {
        package let rawValue: Int32
        package init(rawValue: Int32) { self.rawValue = rawValue }

        package static let readOnly = OpenFlags(rawValue: SQLITE_OPEN_READONLY)
        package static let readWrite = OpenFlags(rawValue: SQLITE_OPEN_READWRITE)
        /// Create the file when it does not exist (with `readWrite`).
        package static let create = OpenFlags(rawValue: SQLITE_OPEN_CREATE)
        /// Interpret the path as a `file:` URI (e.g. `file:x.db?mode=ro`).
        package static let uri = OpenFlags(rawValue: SQLITE_OPEN_URI)
    }

    /// The path (or URI) the connection was opened with.
    package let path: String
    private let handle: OpaquePointer
    private var isClosed = false
    /// Prepared once, reused by the address of their SQL literal (equal text at two addresses is prepared twice):
    /// the store runs the same few statements for every commit, and hashing the text cost about a thousand
    /// instructions a lookup.
    private var cache: [UInt: SQLiteStatement] = [:]
    /// The closure `sqlite3_wal_hook` calls, kept alive here because SQLite holds only an unretained pointer to it.
    private var walHook: WALHook?
    /// The connection is opened with `SQLITE_OPEN_NOMUTEX`: one thread at a time, checked in debug builds.
    private let use = ExclusiveUse()

    /// Opens `path`. `busyTimeout` is how long a statement waits for another connection's lock before failing with
    /// `SQLITE_BUSY`.
    package init(path: String, flags: OpenFlags = [.readWrite, .create], busyTimeout: Duration = .seconds(5)) throws {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags.rawValue | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard rc == SQLITE_OK, let db else {
            let error = SQLiteError(extendedCode: rc, db: db)
            sqlite3_close_v2(db)
            throw error
        }
        self.path = path
        self.handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Self.milliseconds(busyTimeout))
    }

    deinit {
        close()
    }

    /// Finalizes the cached statements and closes the connection; a no-op when already closed.
    ///
    /// `sqlite3_close_v2` defers the actual close until statements still held elsewhere are finalized.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        cache.removeAll()
        sqlite3_wal_hook(handle, nil, nil)
        walHook = nil
        sqlite3_close_v2(handle)
    }

    /// A WAL checkpoint mode (`SQLITE_CHECKPOINT_*`).
    package enum CheckpointMode: Sendable {
        /// Copy what can be copied without waiting for anyone.
        case passive
        /// Wait for the writer, copy everything, and make the next writer restart the WAL from its beginning.
        case restart
        /// As `restart`, and truncate the WAL file to zero bytes.
        case truncate

        var rawValue: Int32 {
            switch self {
            case .passive: SQLITE_CHECKPOINT_PASSIVE
            case .restart: SQLITE_CHECKPOINT_RESTART
            case .truncate: SQLITE_CHECKPOINT_TRUNCATE
            }
        }
    }

    /// Copies WAL frames back into the database file. Returns the frames in the WAL and how many of them are now
    /// in the database file. Callable from within `onWALCommit`.
    @discardableResult
    package func checkpoint(_ mode: CheckpointMode) throws(SQLiteError) -> (walFrames: Int32, checkpointedFrames: Int32)
    {
        try use.checked("a SQLite connection") { () throws(SQLiteError) in try checkpointInside(mode) }
    }

    private func checkpointInside(_ mode: CheckpointMode) throws(SQLiteError) -> (
        walFrames: Int32, checkpointedFrames: Int32
    ) {
        try checkOpen()
        var walFrames: Int32 = 0
        var checkpointedFrames: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(handle, nil, mode.rawValue, &walFrames, &checkpointedFrames)
        guard rc == SQLITE_OK else { throw SQLiteError(extendedCode: rc, db: handle, sql: "checkpoint \(mode)") }
        return (walFrames, checkpointedFrames)
    }

    /// Calls `body` with the number of pages in the WAL after every commit, or with nil stops doing so. Replaces
    /// SQLite's automatic checkpoint, so `body` decides when to checkpoint.
    package func onWALCommit(_ body: ((_ walPages: Int32) -> Void)?) {
        guard !isClosed else { return }
        guard let body else {
            sqlite3_wal_hook(handle, nil, nil)
            walHook = nil
            return
        }
        let hook = WALHook(body)
        walHook = hook
        sqlite3_wal_hook(
            handle,
            { context, _, _, pages in
                // SQLite passes back the pointer registered below; `walHook` keeps its object alive.
                Unmanaged<WALHook>.fromOpaque(context!).takeUnretainedValue().body(pages)
                return SQLITE_OK
            }, Unmanaged.passUnretained(hook).toOpaque())
    }

    /// Runs one or more `;`-separated statements that take no parameters (schema scripts, pragmas, BEGIN/COMMIT).
    package func execute(_ script: String) throws {
        try use.checked("a SQLite connection") {
            try checkOpen()
            let rc = sqlite3_exec(handle, script, nil, nil, nil)
            guard rc == SQLITE_OK else { throw SQLiteError(extendedCode: rc, db: handle, sql: script) }
        }
    }

    /// Prepares a statement the caller owns.
    package func prepare(_ sql: String) throws -> SQLiteStatement {
        try prepare(sql, flags: 0)
    }

    /// Returns the connection's prepared statement for `sql`, preparing it on first use. SQL built at run time is
    /// not cached (it could fill the cache without bound): ``prepare(_:)`` it.
    package func cachedStatement(_ sql: StaticString) throws -> SQLiteStatement {
        try use.checked("a SQLite connection") {
            // `utf8Start` traps only for a literal of one Unicode scalar, which is no statement.
            let key = UInt(bitPattern: sql.utf8Start)
            if let statement = cache[key] { return statement }
            let statement = try prepare(sql.description, flags: UInt32(SQLITE_PREPARE_PERSISTENT))
            cache[key] = statement
            return statement
        }
    }

    /// Runs one cached statement with `values`, ignoring any result rows.
    package func run(_ sql: StaticString, _ values: [SQLiteValue] = []) throws {
        try use.checked("a SQLite connection") { try cachedStatement(sql).run(values) }
    }

    /// Runs one cached statement with `values` and maps its rows.
    package func rows<T>(
        _ sql: StaticString, _ values: [SQLiteValue] = [], _ transform: (SQLiteStatement) throws -> T
    ) throws -> [T] {
        try use.checked("a SQLite connection") { try cachedStatement(sql).rows(values, transform) }
    }

    /// Runs one cached statement with `values` and maps its rows while `more` says so (see
    /// ``SQLiteStatement/rows(_:while:_:)``).
    package func rows<T>(
        _ sql: StaticString, _ values: [SQLiteValue] = [], while more: ([T]) -> Bool,
        _ transform: (SQLiteStatement) throws -> T
    ) throws -> [T] {
        try use.checked("a SQLite connection") { try cachedStatement(sql).rows(values, while: more, transform) }
    }

    /// Runs one cached statement with `values` and maps its first row, if any.
    package func firstRow<T>(
        _ sql: StaticString, _ values: [SQLiteValue] = [], _ transform: (SQLiteStatement) throws -> T
    ) throws -> T? {
        try use.checked("a SQLite connection") { try cachedStatement(sql).firstRow(values, transform) }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    package var changes: Int64 { sqlite3_changes64(handle) }

    /// Whether a transaction is open (SQLite rolls some back by itself after `SQLITE_FULL`, I/O or busy errors).
    package var isInTransaction: Bool { !isClosed && sqlite3_get_autocommit(handle) == 0 }

    /// Whether the connection was opened read-only or the file could only be opened for reading.
    package var isReadOnly: Bool { !isClosed && sqlite3_db_readonly(handle, "main") == 1 }

    /// Copies this connection's main database into `destination`'s with SQLite's online backup API, in one step:
    /// one read transaction, so the copy is the database as of one commit, while other connections keep writing
    /// (in WAL mode a reader does not block the writer).
    package func backup(into destination: SQLiteConnection) throws {
        try checkOpen()
        try destination.checkOpen()
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw SQLiteError(extendedCode: sqlite3_extended_errcode(destination.handle), db: destination.handle)
        }
        let rc = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard rc == SQLITE_DONE else {
            throw SQLiteError(extendedCode: rc, message: String(cString: sqlite3_errstr(rc)))
        }
        guard finished == SQLITE_OK else { throw SQLiteError(extendedCode: finished, db: destination.handle) }
    }

    private func prepare(_ sql: String, flags: UInt32) throws -> SQLiteStatement {
        try checkOpen()
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, flags, &statement, nil)
        guard rc == SQLITE_OK else { throw SQLiteError(extendedCode: rc, db: handle, sql: sql) }
        guard let statement else {
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "no statement in SQL text", sql: sql)
        }
        return SQLiteStatement(handle: statement, db: handle, sql: sql)
    }

    private func checkOpen() throws(SQLiteError) {
        if isClosed { throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "connection to \(path) is closed") }
    }

    private final class WALHook {
        let body: (Int32) -> Void
        init(_ body: @escaping (Int32) -> Void) { self.body = body }
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
