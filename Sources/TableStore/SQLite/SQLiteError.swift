import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// A failed SQLite call: the result code, the extended code that refines it, and SQLite's own message,
/// read from the connection right after the failure (before another call can overwrite it).
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The primary result code, e.g. `SQLITE_FULL`.
    public let code: Int32
    /// The extended result code, e.g. `SQLITE_IOERR_FSYNC`; equal to `code` when SQLite has nothing finer to say.
    public let extendedCode: Int32
    /// `sqlite3_errmsg` at the time of the failure.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?
    /// The operating system's `errno` behind an I/O or open failure (`sqlite3_system_errno`), 0 when none.
    public let systemErrno: Int32

    /// Makes an error from an extended (or primary) result code; the primary code is its low byte.
    public init(extendedCode: Int32, message: String, sql: String? = nil, systemErrno: Int32 = 0) {
        self.code = extendedCode & 0xFF
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno
    }

    /// Reads the message of the last failure on `db`.
    init(extendedCode: Int32, db: OpaquePointer?, sql: String? = nil) {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(extendedCode))
        self.init(
            extendedCode: extendedCode, message: message, sql: sql, systemErrno: db.map(sqlite3_system_errno) ?? 0)
    }

    /// The database or the disk is full (`SQLITE_FULL`), including a `max_page_count` limit reached.
    public var isFull: Bool { code == SQLITE_FULL }
    /// A write was attempted on a read-only database or connection (`SQLITE_READONLY`), or the file or its folder
    /// could not be opened for writing (`SQLITE_CANTOPEN` with `EROFS`, `EACCES` or `EPERM`).
    public var isReadOnly: Bool {
        code == SQLITE_READONLY || (code == SQLITE_CANTOPEN && [EROFS, EACCES, EPERM].contains(systemErrno))
    }
    /// The file's structure is damaged (`SQLITE_CORRUPT`).
    public var isCorrupt: Bool { code == SQLITE_CORRUPT }
    /// The file is not a SQLite database at all (`SQLITE_NOTADB`).
    public var isNotADatabase: Bool { code == SQLITE_NOTADB }
    /// Another connection holds the lock longer than the busy timeout (`SQLITE_BUSY`, `SQLITE_LOCKED`).
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    /// The operating system reported an I/O failure (`SQLITE_IOERR`).
    public var isIOError: Bool { code == SQLITE_IOERR }
    /// The file could not be opened (`SQLITE_CANTOPEN`).
    public var isCantOpen: Bool { code == SQLITE_CANTOPEN }
    /// A uniqueness, not-null or check constraint failed (`SQLITE_CONSTRAINT`).
    public var isConstraint: Bool { code == SQLITE_CONSTRAINT }

    public var description: String {
        var text = "SQLite error \(code)"
        if extendedCode != code { text += " (extended \(extendedCode))" }
        text += ": \(message)"
        if let sql { text += " [\(sql)]" }
        return text
    }
}
