/// A row as a client names it: its index path at the client's base version and, optionally, its id, which the
/// engine checks so that an intent never silently lands on a different row.
public struct RowRef: Hashable, Sendable {
    /// The index path at the client's base version.
    public var path: RowPath
    /// The row's id, if the client wants it checked.
    public var id: String?

    /// Creates a reference.
    public init(_ path: RowPath, id: String? = nil) {
        self.path = path
        self.id = id
    }
}

/// A section as a client names it: its index at the client's base version and, optionally, its id.
public struct SectionRef: Hashable, Sendable {
    /// The section index at the client's base version.
    public var index: Int
    /// The section's id, if the client wants it checked.
    public var id: String?

    /// Creates a reference.
    public init(_ index: Int, id: String? = nil) {
        self.index = index
        self.id = id
    }
}
