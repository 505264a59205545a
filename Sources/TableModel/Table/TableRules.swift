/// The table-view delegate's decisions, taken by the server for every client: what may move where, whether the
/// last row of each section is an add-item placeholder, and the size limits.
public struct TableRules: Hashable, Sendable {
    /// Where rows may be moved.
    public enum Moves: String, Hashable, Sendable, CaseIterable {
        /// Anywhere (the default).
        case any
        /// Only within their section; a destination in another section is retargeted as in the reordering
        /// document's Listing 8-3 (toward an earlier section: row 0, toward a later one: the last row; several
        /// moves of one batch take the first or last free rows in entry order).
        case withinSection
        /// Nowhere: every row move is refused with `not_movable`. Sections may still be moved.
        case none
    }

    /// Where rows may be moved.
    public var moves: Moves
    /// Whether the last row of each section is an add-item placeholder: it cannot be deleted or moved, and
    /// insertions and move destinations after it are retargeted to just before it.
    public var reserveLastRow: Bool
    /// The title of the swipe-to-delete confirmation button that editors show (`titleForDeleteConfirmationButton`).
    public var deleteConfirmationTitle: String
    // Limits apply to changes made after them: a table may hold more (a limit lowered since), and then only
    // changes that grow the quantity further are refused (see `TableEngine.checkLimits`).

    /// The most sections the table may have.
    public var maxSections: Int
    /// The most rows any one section may have.
    public var maxRowsPerSection: Int
    /// The largest encoded JSON size of a row's value, in bytes.
    public var maxValueBytes: Int

    /// Creates rules; the defaults are those of a new table.
    public init(
        moves: Moves = .any, reserveLastRow: Bool = false, deleteConfirmationTitle: String = "Delete",
        maxSections: Int = 10_000, maxRowsPerSection: Int = 100_000, maxValueBytes: Int = 65_536
    ) {
        self.moves = moves
        self.reserveLastRow = reserveLastRow
        self.deleteConfirmationTitle = deleteConfirmationTitle
        self.maxSections = maxSections
        self.maxRowsPerSection = maxRowsPerSection
        self.maxValueBytes = maxValueBytes
    }
}
