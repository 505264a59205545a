import CSQLite

/// A prepared statement. Finalized when the last reference goes away.
///
/// It keeps the raw connection handle only to read error messages: the connection closes with `sqlite3_close_v2`,
/// which keeps that handle alive until every statement is finalized, so a statement never dangles and the
/// connection's statement cache does not form a reference cycle.
package final class SQLiteStatement {
    /// The SQL text it was prepared from.
    package let sql: String
    private let handle: OpaquePointer
    private let db: OpaquePointer

    init(handle: OpaquePointer, db: OpaquePointer, sql: String) {
        self.handle = handle
        self.db = db
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    // MARK: Binding (parameter indices start at 1, as in SQLite)

    /// Resets the statement, clears its bindings and binds `values` to parameters 1, 2, ….
    package func bind(_ values: [SQLiteValue]) throws {
        reset()
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds one value to the parameter at `index`.
    package func bind(_ value: SQLiteValue, at index: Int32) throws {
        switch value {
        case .integer(let integer): try bind(integer, at: index)
        case .real(let real): try bind(real, at: index)
        case .text(let text): try bind(text, at: index)
        case .blob(let bytes): try bind(bytes, at: index)
        case .null: try bindNull(at: index)
        }
    }

    package func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    package func bind(_ value: Double, at index: Int32) throws {
        try check(sqlite3_bind_double(handle, index, value))
    }

    /// Binds UTF-8 text; SQLite copies it, so the string need not outlive the call.
    package func bind(_ value: String, at index: Int32) throws {
        var value = value
        let rc = value.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { chars in
                // An empty buffer may have no base address, which SQLite would read as NULL.
                guard let start = chars.baseAddress, !chars.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, CSQLite_SQLITE_TRANSIENT())
                }
                return sqlite3_bind_text(handle, index, start, Int32(chars.count), CSQLite_SQLITE_TRANSIENT())
            }
        }
        try check(rc)
    }

    /// Binds a blob; SQLite copies it.
    package func bind(_ value: [UInt8], at index: Int32) throws {
        let rc = value.withUnsafeBytes { bytes in
            bytes.isEmpty
                ? sqlite3_bind_zeroblob(handle, index, 0)
                : sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), CSQLite_SQLITE_TRANSIENT())
        }
        try check(rc)
    }

    package func bindNull(at index: Int32) throws {
        try check(sqlite3_bind_null(handle, index))
    }

    // MARK: Stepping

    /// Advances to the next row: true when a row is available, false when the statement is done.
    package func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc: throw SQLiteError(extendedCode: rc, db: db, sql: sql)
        }
    }

    /// Rewinds the statement so it can run again and releases the read it may hold (which, in WAL mode, would
    /// otherwise keep the checkpointer from recycling the log). Bindings are kept.
    package func reset() {
        // The result repeats the last step's error, which `step` already reported.
        sqlite3_reset(handle)
    }

    /// Binds `values`, runs the statement to completion and resets it.
    package func run(_ values: [SQLiteValue] = []) throws {
        try withBindings(values) { while try step() {} }
    }

    /// Binds `values`, maps every result row through `transform` and resets the statement.
    package func rows<T>(_ values: [SQLiteValue] = [], _ transform: (SQLiteStatement) throws -> T) throws -> [T] {
        try withBindings(values) {
            var rows: [T] = []
            while try step() {
                rows.append(try transform(self))
            }
            return rows
        }
    }

    /// Binds `values`, maps result rows through `transform` while `more` says so of the rows taken so far (it is
    /// asked before each row after the first), and resets: a read that stops at a size, not only a count.
    package func rows<T>(
        _ values: [SQLiteValue] = [], while more: ([T]) -> Bool, _ transform: (SQLiteStatement) throws -> T
    ) throws -> [T] {
        try withBindings(values) {
            var rows: [T] = []
            while rows.isEmpty || more(rows), try step() {
                rows.append(try transform(self))
            }
            return rows
        }
    }

    /// Binds `values`, maps the first result row through `transform` (nil when there is none) and resets.
    package func firstRow<T>(_ values: [SQLiteValue] = [], _ transform: (SQLiteStatement) throws -> T) throws -> T? {
        try withBindings(values) { try step() ? transform(self) : nil }
    }

    /// Resets the statement, binds `values` to parameters 1, 2, … and runs `body`, then resets the statement and
    /// clears its bindings (parameters after `values` are NULL: every run leaves them cleared).
    ///
    /// Text is copied into one buffer and bound there (`SQLITE_STATIC`), not copied by SQLite, which cost an
    /// allocation, a copy and a free per value (a durable intent binds a dozen); the bindings are cleared before
    /// the buffer goes.
    private func withBindings<T>(_ values: [SQLiteValue], _ body: () throws -> T) throws -> T {
        reset()
        defer {
            reset()
            sqlite3_clear_bindings(handle)
        }
        var text: [UInt8] = []
        text.reserveCapacity(values.reduce(0) { $0 + $1.textByteCount })
        // From each string's contiguous bytes at once (its `utf8` view was appended byte by byte).
        for case .text(var string) in values { string.withUTF8 { text.append(contentsOf: $0) } }
        return try text.withUnsafeBufferPointer { text in
            var offset = 0
            for (index, value) in values.enumerated() {
                let parameter = Int32(index + 1)
                // Empty text is bound as a copy: an empty buffer has no address, and SQLite reads none as NULL.
                guard case .text(let string) = value, !string.isEmpty, let start = text.baseAddress else {
                    try bind(value, at: parameter)
                    continue
                }
                let count = string.utf8.count
                let rc = UnsafeRawPointer(start + offset).withMemoryRebound(to: CChar.self, capacity: count) {
                    sqlite3_bind_text(handle, parameter, $0, Int32(count), CSQLite_SQLITE_STATIC())
                }
                try check(rc)
                offset += count
            }
            return try body()
        }
    }

    // MARK: Columns of the current row (indices start at 0, as in SQLite)

    package var columnCount: Int32 { sqlite3_column_count(handle) }

    package func columnName(at index: Int32) -> String {
        String(cString: sqlite3_column_name(handle, index))
    }

    package func isNull(at index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    package func int64(at index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    package func double(at index: Int32) -> Double {
        sqlite3_column_double(handle, index)
    }

    /// The column as UTF-8 text ("" for NULL); decoded by length, so embedded NULs survive.
    package func text(at index: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The column as text, or nil when it is NULL.
    package func optionalText(at index: Int32) -> String? {
        isNull(at: index) ? nil : text(at: index)
    }

    /// The column as bytes (empty for NULL).
    package func blob(at index: Int32) -> [UInt8] {
        guard let bytes = sqlite3_column_blob(handle, index) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, index))))
    }

    /// The column in its own storage class.
    package func value(at index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: .integer(int64(at: index))
        case SQLITE_FLOAT: .real(double(at: index))
        case SQLITE_TEXT: .text(text(at: index))
        case SQLITE_BLOB: .blob(blob(at: index))
        default: .null
        }
    }

    private func check(_ rc: Int32) throws {
        guard rc == SQLITE_OK else { throw SQLiteError(extendedCode: rc, db: db, sql: sql) }
    }
}
