/// A committed batch update with `beginUpdates`/`endUpdates` semantics: what every replica receives and applies.
///
/// Index rules, exactly as UIKit documents them: deletions, reloads and move sources are positions in the table
/// *before* the batch; insertions and move destinations are positions in the table *after* it; the order of
/// entries within a list does not matter. Inserted sections and rows carry the ids the table assigned.
public struct Batch: Hashable, Sendable {
    /// A section inserted at its final index, with its content and ids.
    public struct SectionInsert: Hashable, Sendable {
        /// The section's index after the update.
        public var at: Int
        /// The new section.
        public var section: Section
        /// Creates an entry.
        public init(at: Int, section: Section) {
            self.at = at
            self.section = section
        }
    }

    /// A section whose header and footer are replaced (both are given in full).
    public struct SectionReload: Hashable, Sendable {
        /// The section's index before the update.
        public var at: Int
        /// The new header.
        public var header: String?
        /// The new footer.
        public var footer: String?
        /// Creates an entry.
        public init(at: Int, header: String?, footer: String?) {
            self.at = at
            self.header = header
            self.footer = footer
        }
    }

    /// A section moved from its index before the update to its index after it.
    public struct SectionMove: Hashable, Sendable {
        /// The index before the update.
        public var from: Int
        /// The index after the update.
        public var to: Int
        /// Creates an entry.
        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// A row inserted at its final index path, with its id.
    public struct RowInsert: Hashable, Sendable {
        /// The index path after the update.
        public var at: RowPath
        /// The new row.
        public var row: Row
        /// Creates an entry.
        public init(at: RowPath, row: Row) {
            self.at = at
            self.row = row
        }
    }

    /// A row whose value (and optionally flags) is replaced.
    public struct RowReload: Hashable, Sendable {
        /// The index path before the update.
        public var at: RowPath
        /// The new value.
        public var value: JSONValue
        /// The new `editable` flag, or `nil` to keep it.
        public var editable: Bool?
        /// The new `movable` flag, or `nil` to keep it.
        public var movable: Bool?
        /// The new editing style, or `nil` to keep it.
        public var editingStyle: EditingStyle?
        /// Creates an entry.
        public init(
            at: RowPath, value: JSONValue, editable: Bool? = nil, movable: Bool? = nil,
            editingStyle: EditingStyle? = nil
        ) {
            self.at = at
            self.value = value
            self.editable = editable
            self.movable = movable
            self.editingStyle = editingStyle
        }
    }

    /// A row moved from its index path before the update to its index path after it.
    public struct RowMove: Hashable, Sendable {
        /// The index path before the update.
        public var from: RowPath
        /// The index path after the update.
        public var to: RowPath
        /// Creates an entry.
        public init(from: RowPath, to: RowPath) {
            self.from = from
            self.to = to
        }
    }

    /// Sections to delete, by index before the update.
    public var deleteSections: [Int]
    /// Sections to insert, at indices after the update.
    public var insertSections: [SectionInsert]
    /// Sections whose header and footer change, by index before the update.
    public var reloadSections: [SectionReload]
    /// Sections to move.
    public var moveSections: [SectionMove]
    /// Rows to delete, by index path before the update.
    public var deleteRows: [RowPath]
    /// Rows to insert, at index paths after the update.
    public var insertRows: [RowInsert]
    /// Rows whose value changes, by index path before the update.
    public var reloadRows: [RowReload]
    /// Rows to move.
    public var moveRows: [RowMove]

    /// Creates a batch; every list defaults to empty.
    public init(
        deleteSections: [Int] = [], insertSections: [SectionInsert] = [], reloadSections: [SectionReload] = [],
        moveSections: [SectionMove] = [], deleteRows: [RowPath] = [], insertRows: [RowInsert] = [],
        reloadRows: [RowReload] = [], moveRows: [RowMove] = []
    ) {
        self.deleteSections = deleteSections
        self.insertSections = insertSections
        self.reloadSections = reloadSections
        self.moveSections = moveSections
        self.deleteRows = deleteRows
        self.insertRows = insertRows
        self.reloadRows = reloadRows
        self.moveRows = moveRows
    }

    /// Whether every list is empty.
    public var isEmpty: Bool {
        deleteSections.isEmpty && insertSections.isEmpty && reloadSections.isEmpty && moveSections.isEmpty
            && deleteRows.isEmpty && insertRows.isEmpty && reloadRows.isEmpty && moveRows.isEmpty
    }

    /// The number of the first id the batch assigns (ids are `s<n>`/`r<n>`), if it assigns any.
    var firstCreatedNumber: UInt64? {
        let ids = insertSections.flatMap { [$0.section.id] + $0.section.rows.map(\.id) } + insertRows.map(\.row.id)
        return ids.compactMap { UInt64($0.dropFirst()) }.min()
    }

    /// The same batch with every list sorted by position, the form the engine commits, so that equal updates
    /// are equal values and encode to identical bytes.
    public var canonical: Batch {
        var batch = self
        batch.deleteSections.sort()
        batch.insertSections.sort { $0.at < $1.at }
        batch.reloadSections.sort { $0.at < $1.at }
        batch.moveSections.sort { $0.from < $1.from }
        batch.deleteRows.sort()
        batch.insertRows.sort { $0.at < $1.at }
        batch.reloadRows.sort { $0.at < $1.at }
        batch.moveRows.sort { $0.from < $1.from }
        return batch
    }
}

/// The eight lists of a batch, in UIKit's order, then `patchRows`, which only a ``ClientBatch`` has (a committed
/// batch carries a patch's merged value in `reloadRows`): the one table of their names, which both batch shapes
/// use for their wire keys and for naming entries in messages (`deleteRows[1]`).
public enum BatchList: String, Sendable, CaseIterable {
    case deleteSections, insertSections, reloadSections, moveSections, deleteRows, insertRows, reloadRows, moveRows
    case patchRows

    /// The lists of a committed ``Batch``.
    public static let committed = allCases.filter { $0 != .patchRows }
}
