/// A row's position: its section and its row within that section, both zero-based. (Not named `IndexPath`
/// so that it never clashes with Foundation's type in modules that import both.)
public struct RowPath: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The section index.
    public var section: Int
    /// The row index within the section.
    public var row: Int

    /// Creates the index path of `row` in `section`.
    public init(section: Int, row: Int) {
        self.section = section
        self.row = row
    }

    /// Table order: by section, then by row.
    public static func < (lhs: RowPath, rhs: RowPath) -> Bool {
        (lhs.section, lhs.row) < (rhs.section, rhs.row)
    }

    /// The wire form, `[section,row]`, which is also how error messages name rows.
    public var description: String { "[\(section),\(row)]" }
}
