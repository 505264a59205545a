/// One section of a table: a stable id, an optional header and footer, and ordered rows.
public struct Section: Hashable, Sendable {
    /// The id the table assigned; unique within the table and never reused.
    public var id: String
    /// The header title, if any.
    public var header: String?
    /// The footer title, if any.
    public var footer: String?
    /// The rows, in display order.
    public var rows: [Row]

    /// Creates a section; ids come from the table's generator, so outside the model this is for decoding and tests.
    public init(id: String, header: String? = nil, footer: String? = nil, rows: [Row] = []) {
        self.id = id
        self.header = header
        self.footer = footer
        self.rows = rows
    }
}

/// A section as a client proposes it: everything but the ids, which the table assigns on commit.
public struct SectionContent: Hashable, Sendable {
    /// The header title, if any.
    public var header: String?
    /// The footer title, if any.
    public var footer: String?
    /// The rows, in display order.
    public var rows: [RowContent]

    /// Creates section content.
    public init(header: String? = nil, footer: String? = nil, rows: [RowContent] = []) {
        self.header = header
        self.footer = footer
        self.rows = rows
    }
}
