/// A shared table: ordered sections, the version of the last committed batch, the rules, and the id generator.
///
/// A plain value: the server, the store and every client replica hold one and change it only through
/// ``apply(_:)``, so equal histories give equal tables.
public struct Table: Hashable, Sendable {
    /// The sections, in display order.
    public var sections: [Section]
    /// How many batches have been committed; a new table is at version 0.
    public var version: UInt64
    /// The delegate decisions and limits.
    public var rules: TableRules
    /// The number the next assigned id will carry. Sections and rows share one counter (`s1`, `r2`, `r3`, ...),
    /// so ids are unique across the table and never reused; it is table state so that a snapshot restores it.
    public var nextID: UInt64

    /// Creates a table; a new one is empty, at version 0, and assigns ids from 1.
    public init(sections: [Section] = [], version: UInt64 = 0, rules: TableRules = TableRules(), nextID: UInt64 = 1) {
        self.sections = sections
        self.version = version
        self.rules = rules
        self.nextID = nextID
    }

    /// The row at `path`, or `nil` when there is none.
    public func row(at path: RowPath) -> Row? {
        guard sections.indices.contains(path.section), sections[path.section].rows.indices.contains(path.row) else {
            return nil
        }
        return sections[path.section].rows[path.row]
    }

    /// Creates a table at version 0 holding `contents`, assigning ids in order (`s1`, `r2`, `r3`, `s4`, ...) as
    /// if one batch had inserted them; for seeding a new table and for tests.
    public init(contents: [SectionContent], rules: TableRules = TableRules()) {
        self.init(rules: rules)
        for content in contents {
            var section = Section(id: assignID(.section), header: content.header, footer: content.footer)
            for row in content.rows {
                section.rows.append(
                    Row(
                        id: assignID(.row), value: row.value, editable: row.editable, movable: row.movable,
                        editingStyle: row.editingStyle))
            }
            sections.append(section)
        }
    }

    /// Takes the next id from the generator.
    mutating func assignID(_ kind: IDKind) -> String {
        defer { nextID += 1 }
        return Table.id(kind, nextID)
    }

    /// The id numbered `number`: sections are `s<n>`, rows `r<n>`.
    static func id(_ kind: IDKind, _ number: UInt64) -> String { "\(kind.rawValue)\(number)" }

    enum IDKind: String {
        case section = "s"
        case row = "r"
    }
}
