/// Why a store operation failed: a kind to branch on, a message for the log that names the file or table and the
/// problem, and the SQLite error underneath when there was one.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a closed set of static members.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The file exists but is not a SQLite database (garbage bytes, another format).
        public static let notADatabase = Kind("notADatabase")
        /// The file is a SQLite database of another application, or of a schema version this build does not know.
        public static let foreign = Kind("foreign")
        /// The file is a damaged database (`SQLITE_CORRUPT`, or `PRAGMA quick_check` found problems).
        public static let corrupt = Kind("corrupt")
        /// The disk or the database's page limit is full (`SQLITE_FULL`).
        public static let full = Kind("full")
        /// The database or its connection is read-only (`SQLITE_READONLY`).
        public static let readOnly = Kind("readOnly")
        /// The operating system failed a read, write, sync or open (`SQLITE_IOERR`, `SQLITE_CANTOPEN`).
        public static let io = Kind("io")
        /// Another process held the database lock past the busy timeout (`SQLITE_BUSY`).
        public static let busy = Kind("busy")
        /// `createTable` named a table that already exists.
        public static let tableExists = Kind("tableExists")
        /// The operation named a table that does not exist.
        public static let noSuchTable = Kind("noSuchTable")
        /// A record's version is not the table's next version, or a (client, ref) pair is already stored.
        public static let conflict = Kind("conflict")
        /// The database server cannot be reached (refused, lost, shutting down); the store reconnects by itself.
        public static let unreachable = Kind("unreachable")
        /// A (client, ref) pair of the group is already stored by another node sharing the database: it took a
        /// retry of the same intent. The group must be resolved again, answering that intent from its stored ack.
        public static let duplicateRef = Kind("duplicateRef")
        /// Any other SQLite failure (misuse, out of memory, …): a bug or an exotic condition.
        public static let `internal` = Kind("internal")

        /// Failures of the storage itself rather than of the request: the server answers `unavailable` and keeps
        /// serving reads.
        public var isStorageFailure: Bool {
            [.notADatabase, .foreign, .corrupt, .full, .readOnly, .io, .busy, .unreachable].contains(self)
        }
    }

    public let kind: Kind
    public let message: String
    /// The database's own failure this error was made from.
    public enum Underlying: Sendable {
        case sqlite(SQLiteError)
        case postgres(PostgresError)
    }

    /// The database's failure this error was made from, if any: in the server's log, never in a client's message.
    public let underlying: Underlying?
    /// The connection to the database was lost while a statement was on its way or being answered: what it was to
    /// write may have been written (a commit whose answer was lost). Only `.unreachable` failures are in doubt.
    public internal(set) var outcomeUnknown = false

    public init(_ kind: Kind, _ message: String, underlying: Underlying? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        switch underlying {
        case nil:
            return "\(kind): \(message)"
        case .sqlite(let error):
            let statement = error.sql.map { ", in \($0)" } ?? ""
            return "\(kind): \(message) [SQLite code \(error.code), extended \(error.extendedCode)\(statement)]"
        case .postgres:
            // The message already holds PostgreSQL's words, SQLSTATE and statement.
            return "\(kind): \(message)"
        }
    }
}

extension StoreError {
    /// Classifies a SQLite failure. `context` says what the store was doing, e.g. "commit of 16 records to x.db".
    init(_ error: SQLiteError, while context: String) {
        let kind: Kind =
            if error.isFull { .full } else if error.isReadOnly { .readOnly } else if error.isCorrupt {
                .corrupt
            } else if error.isNotADatabase { .notADatabase } else if error.isIOError || error.isCantOpen {
                .io
            } else if error.isBusy { .busy } else if error.isConstraint { .conflict } else { .internal }
        let what =
            switch kind {
            case .full: "the disk or the database's size limit is full"
            case .readOnly: "the database file or its folder is read-only"
            case .corrupt: "the database file is corrupt"
            case .notADatabase: "the file is not a SQLite database"
            case .io: "an I/O error occurred"
            case .busy: "the database is locked by another process"
            case .conflict: "a record conflicts with one already stored"
            default: "SQLite failed"
            }
        self.init(kind, "\(context): \(what) (SQLite: \(error.message))", underlying: .sqlite(error))
    }
}

extension StoreError {
    /// Classifies a PostgreSQL failure. `context` says what the store was doing.
    init(_ error: PostgresError, while context: String) {
        let kind: Kind =
            if error.isConnectionFailure { .unreachable } else if error.isFull { .full } else if error.isReadOnly {
                .readOnly
            } else if error.isConstraint { .conflict } else { .internal }
        self.init(kind, "\(context): \(error)", underlying: .postgres(error))
    }
}
