import CLibPQ
import Glibc

/// One libpq connection, used by one thread at a time. Parameters and results are text; the handle is freed in
/// deinit.
final class PostgresConnection {
    /// The connection URL or keyword string it was opened with.
    let url: String
    private let handle: OpaquePointer
    /// libpq connections are not thread-safe: one thread at a time, checked in debug builds.
    private let use = ExclusiveUse()

    /// Connects to `url` (`postgresql://USER@HOST:PORT/DB`, or libpq's `key=value` form), with ``timeouts``
    /// added unless the URL sets them.
    init(url: String) throws(PostgresError) {
        self.url = url
        guard let handle = PQconnectdb(Self.withTimeouts(url)) else {
            throw PostgresError(sqlState: nil, message: "libpq could not allocate a connection")
        }
        // Checked before `self.handle` is set: once every property is, a throwing init runs deinit (PQfinish).
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.message(handle)
            PQfinish(handle)
            throw PostgresError(sqlState: nil, message: message)
        }
        self.handle = handle
        // Keeps the server's notices (e.g. "relation already exists, skipping") off stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// Whether the connection is up, as far as libpq knows (it learns of a lost server on the next call).
    var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Reconnects with the same parameters.
    func reset() throws(PostgresError) {
        try use.checked("a PostgreSQL connection") { () throws(PostgresError) in
            PQreset(handle)
            guard isConnected else { throw PostgresError(sqlState: nil, message: Self.message(handle)) }
        }
    }

    /// Runs `sql` with text parameters `$1`, `$2`, … and returns its rows (none for commands).
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresResult {
        try use.checked("a PostgreSQL connection") { () throws(PostgresError) in try executeInside(sql, parameters) }
    }

    private func executeInside(_ sql: String, _ parameters: [String?]) throws(PostgresError) -> PostgresResult {
        let result: OpaquePointer? =
            if parameters.isEmpty {
                PQexec(handle, sql)
            } else {
                Self.withCStrings(parameters) { values in
                    PQexecParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)
                }
            }
        guard let result else {
            throw PostgresError(sqlState: nil, message: Self.message(handle), sql: sql)
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, CLibPQ_PG_DIAG_SQLSTATE()).map { String(cString: $0) }
            let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines
            PQclear(result)
            throw PostgresError(
                sqlState: isConnected ? state : nil, message: message.isEmpty ? Self.message(handle) : message, sql: sql
            )
        }
        return PostgresResult(result)
    }

    // MARK: Notifications

    /// The socket to wait on for notifications.
    var socket: Int32 { PQsocket(handle) }

    /// Reads what arrived on the socket and returns the notifications it completed, oldest first.
    func notifications() throws(PostgresError) -> [(channel: String, payload: String)] {
        try use.checked("a PostgreSQL connection") { () throws(PostgresError) in try notificationsInside() }
    }

    private func notificationsInside() throws(PostgresError) -> [(channel: String, payload: String)] {
        guard PQconsumeInput(handle) == 1 else { throw PostgresError(sqlState: nil, message: Self.message(handle)) }
        var received: [(String, String)] = []
        while let notice = PQnotifies(handle) {
            received.append((String(cString: notice.pointee.relname), String(cString: notice.pointee.extra)))
            PQfreemem(notice)
        }
        return received
    }

    /// Bounds on a server that stops answering, so that a commit or a reconnect fails within seconds (and intents
    /// get `unavailable`) instead of waiting for TCP's own timeouts: a connection attempt gives up after 3 s, and
    /// an established connection that stops answering is dropped after about 10 s.
    ///
    /// The same bounds the other way (`options`, the server's settings for the session): a node that stopped
    /// answering, or froze inside a transaction, must not hold the row and advisory locks the other nodes' commits
    /// need. The server drops its session once its peer is silent for about 10 s, or after 10 s idle in a
    /// transaction.
    static let timeouts: [(String, String)] = [
        ("connect_timeout", "3"), ("keepalives_idle", "5"), ("keepalives_interval", "2"), ("keepalives_count", "2"),
        ("tcp_user_timeout", "10000"),
        (
            "options",
            "-c idle_in_transaction_session_timeout=10000 -c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 "
                + "-c tcp_keepalives_count=2 -c tcp_user_timeout=10000"
        ),
    ]

    /// `url` with each of ``timeouts`` the URL does not set.
    static func withTimeouts(_ url: String) -> String {
        let isURL = url.hasPrefix("postgresql://") || url.hasPrefix("postgres://")
        var result = url
        for (key, value) in timeouts where !url.contains(key + "=") {
            if isURL {
                let encoded = value.map { $0 == " " ? "%20" : $0 == "=" ? "%3D" : String($0) }.joined()
                result += (result.contains("?") ? "&" : "?") + "\(key)=\(encoded)"
            } else {
                result += value.contains(" ") ? " \(key)='\(value)'" : " \(key)=\(value)"
            }
        }
        return result
    }

    private static func message(_ handle: OpaquePointer) -> String {
        String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines
    }

    /// Calls `body` with NUL-terminated copies of `strings` (nil stays NULL), valid during the call only.
    private static func withCStrings<T>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer { for copy in copies { free(copy) } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }
}

/// The rows of one statement, as text; the result is freed in deinit.
final class PostgresResult {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) {
        self.result = result
    }

    deinit {
        PQclear(result)
    }

    var count: Int { Int(PQntuples(result)) }
    /// Rows a command changed (`UPDATE`, `INSERT`, `DELETE`).
    var changes: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    func text(_ row: Int, _ column: Int) -> String { String(cString: PQgetvalue(result, Int32(row), Int32(column))) }

    func optionalText(_ row: Int, _ column: Int) -> String? { isNull(row, column) ? nil : text(row, column) }

    func int64(_ row: Int, _ column: Int) -> Int64 { Int64(text(row, column)) ?? 0 }

    /// Each row mapped by `transform`.
    func map<T>(_ transform: (_ row: Int) throws -> T) rethrows -> [T] {
        try (0..<count).map(transform)
    }
}

extension String {
    fileprivate var trimmingTrailingNewlines: String {
        var text = self
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }
}
