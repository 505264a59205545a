/// A batch as a client sends it: the eight lists with UIKit index semantics relative to the client's base
/// version, inserted content without ids (the table assigns them) and optional ids on what it deletes, reloads
/// and moves, plus `patchRows`, merge patches of rows that the engine commits as reloads of the merged value.
///
/// Its entries differ from ``Batch``'s on purpose, which is why there are two types: a committed batch names bare
/// positions and carries the ids the table assigned, while a client's batch names rows and sections as the client
/// saw them (a position at its base, plus an id to check), carries content without ids and tells "keep" from
/// "clear" for headers and footers. The eight lists correspond one to one; ``BatchList`` names them for both, and
/// names `patchRows`, which only a client's batch has.
public struct ClientBatch: Hashable, Sendable {
    /// A section to insert at its index after the update.
    public struct SectionInsert: Hashable, Sendable {
        /// The index after the update.
        public var at: Int
        /// The content.
        public var section: SectionContent
        /// Creates an entry.
        public init(at: Int, section: SectionContent) {
            self.at = at
            self.section = section
        }
    }

    /// A change to a section's header and footer (for each, `nil` keeps it and `.some(nil)` clears it) and,
    /// optionally, of all its rows (UIKit's `reloadSections:` reloads the rows too).
    public struct SectionReload: Hashable, Sendable {
        /// The section, before the update.
        public var section: SectionRef
        /// The new header; `nil` leaves it unchanged, `.some(nil)` clears it.
        public var header: String??
        /// The new footer; `nil` leaves it unchanged, `.some(nil)` clears it.
        public var footer: String??
        /// The rows that replace all of the section's rows (with new ids), or `nil` to keep its rows.
        public var rows: [RowContent]?
        /// Creates an entry.
        public init(section: SectionRef, header: String?? = nil, footer: String?? = nil, rows: [RowContent]? = nil) {
            self.section = section
            self.header = header
            self.footer = footer
            self.rows = rows
        }
    }

    /// A section to move.
    public struct SectionMove: Hashable, Sendable {
        /// The section, before the update.
        public var from: SectionRef
        /// Its index after the update.
        public var to: Int
        /// Creates an entry.
        public init(from: SectionRef, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// A row to insert at its index path after the update.
    public struct RowInsert: Hashable, Sendable {
        /// The index path after the update.
        public var at: RowPath
        /// The content.
        public var row: RowContent
        /// Creates an entry.
        public init(at: RowPath, row: RowContent) {
            self.at = at
            self.row = row
        }
    }

    /// A new value (and optionally new flags) for a row.
    public struct RowReload: Hashable, Sendable {
        /// The row, before the update.
        public var row: RowRef
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
            row: RowRef, value: JSONValue, editable: Bool? = nil, movable: Bool? = nil,
            editingStyle: EditingStyle? = nil
        ) {
            self.row = row
            self.value = value
            self.editable = editable
            self.movable = movable
            self.editingStyle = editingStyle
        }
    }

    /// An RFC 7386 merge patch of a row's value (see ``JSONValue/merging(patch:)``), applied to the value the row
    /// has when the intent is committed, so that members the patch does not name keep what others committed.
    public struct RowPatch: Hashable, Sendable {
        /// The row, before the update.
        public var row: RowRef
        /// The merge patch.
        public var patch: JSONValue
        /// Creates an entry.
        public init(row: RowRef, patch: JSONValue) {
            self.row = row
            self.patch = patch
        }
    }

    /// A row to move.
    public struct RowMove: Hashable, Sendable {
        /// The row, before the update.
        public var from: RowRef
        /// Its proposed index path after the update (the rules may retarget it).
        public var to: RowPath
        /// Creates an entry.
        public init(from: RowRef, to: RowPath) {
            self.from = from
            self.to = to
        }
    }

    /// Sections to delete.
    public var deleteSections: [SectionRef]
    /// Sections to insert.
    public var insertSections: [SectionInsert]
    /// Sections whose header, footer or rows change.
    public var reloadSections: [SectionReload]
    /// Sections to move.
    public var moveSections: [SectionMove]
    /// Rows to delete.
    public var deleteRows: [RowRef]
    /// Rows to insert.
    public var insertRows: [RowInsert]
    /// Rows whose value changes.
    public var reloadRows: [RowReload]
    /// Rows to move.
    public var moveRows: [RowMove]
    /// Rows whose value is merge-patched.
    public var patchRows: [RowPatch]

    /// Creates a client batch; every list defaults to empty.
    public init(
        deleteSections: [SectionRef] = [], insertSections: [SectionInsert] = [],
        reloadSections: [SectionReload] = [], moveSections: [SectionMove] = [], deleteRows: [RowRef] = [],
        insertRows: [RowInsert] = [], reloadRows: [RowReload] = [], moveRows: [RowMove] = [],
        patchRows: [RowPatch] = []
    ) {
        self.deleteSections = deleteSections
        self.insertSections = insertSections
        self.reloadSections = reloadSections
        self.moveSections = moveSections
        self.deleteRows = deleteRows
        self.insertRows = insertRows
        self.reloadRows = reloadRows
        self.moveRows = moveRows
        self.patchRows = patchRows
    }
}
