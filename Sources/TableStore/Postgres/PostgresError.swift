/// A failed libpq call: PostgreSQL's SQLSTATE when the server answered, and its message.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE, e.g. `23505`; nil when no server answered (the connection failed).
    public let sqlState: String?
    /// libpq's or the server's message.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    public init(sqlState: String?, message: String, sql: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
    }

    /// No server answered: the connection could not be made or was lost (class 08, or a server shutting down).
    public var isConnectionFailure: Bool {
        guard let sqlState else { return true }
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("57P")
    }

    /// A unique or other integrity constraint failed (class 23).
    public var isConstraint: Bool { sqlState?.hasPrefix("23") ?? false }
    /// The disk is full (53100).
    public var isFull: Bool { sqlState == "53100" }
    /// A write in a read-only transaction or on a standby (25006).
    public var isReadOnly: Bool { sqlState == "25006" }

    public var description: String {
        "\(message)" + (sqlState.map { " [SQLSTATE \($0)]" } ?? "") + (sql.map { ", in \($0)" } ?? "")
    }
}
