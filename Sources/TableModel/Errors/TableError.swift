/// Why an intent or a batch was refused. `code` is what clients switch on (its raw value is the wire code);
/// `message` names the entry and the fact, for example
/// `deleteRows[1]: row [0,5] does not exist: section 0 has 3 rows before the update`.
public struct TableError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of refusal; raw values are the wire codes.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// An index path or section index that does not exist before (or would not exist after) the update.
        case outOfRange = "out_of_range"
        /// A batch that contradicts itself: duplicates, collisions, operations on what it also deletes, bad ids.
        case invalidBatch = "invalid_batch"
        /// A stale intent's target (or the section of its position) was deleted since the client's base, or a given
        /// id is not the row or section at that place. A target edited or moved since is not a conflict: edits are
        /// last writer wins.
        case conflict
        /// The client's base is older than the kept history (or newer than the table): it must resynchronize.
        case stale
        /// A row that cannot be edited (`editable` false) was deleted or reloaded, or a row that cannot be deleted
        /// (`editingStyle` insert or none, the reserved last row) was deleted.
        case notEditable = "not_editable"
        /// A row that cannot be moved (`movable` false, `editingStyle` insert, the reserved last row, or `moves:
        /// none`) was moved.
        case notMovable = "not_movable"
        /// A limit of the table's rules would be exceeded by growing past it.
        case limitExceeded = "limit_exceeded"
    }

    /// The kind of refusal.
    public let code: Code
    /// The entry the refusal is about, e.g. `deleteRows[1]` or `move`; `nil` when it is about the whole request.
    public let at: String?
    /// The fact, without the entry prefix.
    public let fact: String

    /// Creates an error.
    public init(_ code: Code, at: String?, _ fact: String) {
        self.code = code
        self.at = at
        self.fact = fact
    }

    /// The human message: `at: fact`, or just the fact.
    public var message: String { at.map { "\($0): \(fact)" } ?? fact }

    /// `code: message`, for logs.
    public var description: String { "\(code.rawValue): \(message)" }

    static func outOfRange(_ at: String?, _ fact: String) -> TableError { TableError(.outOfRange, at: at, fact) }
    static func invalidBatch(_ at: String?, _ fact: String) -> TableError { TableError(.invalidBatch, at: at, fact) }
    static func conflict(_ at: String?, _ fact: String) -> TableError { TableError(.conflict, at: at, fact) }
    static func stale(_ at: String?, _ fact: String) -> TableError { TableError(.stale, at: at, fact) }
    static func notEditable(_ at: String?, _ fact: String) -> TableError { TableError(.notEditable, at: at, fact) }
    static func notMovable(_ at: String?, _ fact: String) -> TableError { TableError(.notMovable, at: at, fact) }
    static func limitExceeded(_ at: String?, _ fact: String) -> TableError { TableError(.limitExceeded, at: at, fact) }
}
