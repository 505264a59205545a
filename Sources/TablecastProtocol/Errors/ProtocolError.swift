import TableModel

/// A refusal as the client sees it in an `error` message: a wire code, a message that names the problem, the entry
/// at fault and the request's `ref`. Every layer's errors (decoding, the table model, access control, storage) end
/// up as one of these.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The wire error codes of protocol v1.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        case badRequest = "bad_request"
        case unknownType = "unknown_type"
        case noSuchTable = "no_such_table"
        case tableExists = "table_exists"
        case outOfRange = "out_of_range"
        case invalidBatch = "invalid_batch"
        case conflict
        case stale
        /// A history request reaches before the oldest version the server keeps.
        case pruned
        case notEditable = "not_editable"
        case notMovable = "not_movable"
        case limitExceeded = "limit_exceeded"
        case rateLimited = "rate_limited"
        case refReused = "ref_reused"
        case unauthorized
        case forbidden
        case unavailable
        case `internal`
    }

    public var code: Code
    public var message: String
    /// The entry at fault, e.g. `moveRows[0]`.
    public var at: String?
    /// The `ref` of the request this answers, when it could be read.
    public var ref: String?

    public init(_ code: Code, _ message: String, at: String? = nil, ref: String? = nil) {
        self.code = code
        self.message = message
        self.at = at
        self.ref = ref
    }

    /// The wire form of a table-model refusal.
    public init(_ error: TableError, ref: String? = nil) {
        // TableError's codes are a subset of the wire codes and share their raw values.
        self.init(Code(rawValue: error.code.rawValue) ?? .internal, error.message, at: error.at, ref: ref)
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func badRequest(_ message: String, at: String? = nil) -> ProtocolError {
        ProtocolError(.badRequest, message, at: at)
    }
}
