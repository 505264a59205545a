/// Why a row may not be deleted, moved or edited: the table-view delegate decision that refuses it
/// (`canEditRowAt`, `canMoveRowAt`, `editingStyleForRowAt`, the `moves` rule or the reserved last row).
public enum RowRefusal: Hashable, Sendable {
    /// The row is locked: its `editable` is false.
    case notEditable
    /// The row's `movable` is false.
    case notMovable
    /// The table's rules move no rows (`moves: none`).
    case noMoves
    /// The row's editing style is `insert`: an add-item placeholder wherever it is.
    case insertionControl
    /// The row's editing style is `none`: it has no delete control.
    case noDeleteControl
    /// The row is the last of its section while the rules reserve that row as an add-item placeholder.
    case reservedLastRow

    /// Whether the row is refused for being an add-item placeholder (its editing style, or the reserved last row).
    public var isPlaceholder: Bool { self == .insertionControl || self == .reservedLastRow }
}

/// The delegate decisions about rows, in one place: the engine refuses intents with them, and editors ask them
/// before offering a control, so that what an editor offers is what the server accepts. Each takes the index path
/// of a row in this table and traps when there is none.
extension Table {
    /// Whether the row at `path` is the last of its section while the rules reserve that row (`reserveLastRow`).
    public func isReservedLastRow(_ path: RowPath) -> Bool {
        rules.reserveLastRow && path.row == sections[path.section].rows.count - 1
    }

    /// Whether the row at `path` is an add-item placeholder: its editing style is `insert`, or it is the reserved
    /// last row. New rows go next to it through its insertion control.
    public func isPlaceholder(_ path: RowPath) -> Bool {
        sections[path.section].rows[path.row].editingStyle == .insert || isReservedLastRow(path)
    }

    /// Why the row at `path` may not be deleted, or nil when it may. A locked row is refused first, then by its
    /// editing style, then as the reserved last row. (Deleting a whole section takes its rows whatever this says.)
    public func deleteRefusal(at path: RowPath) -> RowRefusal? {
        let row = sections[path.section].rows[path.row]
        if !row.editable { return .notEditable }
        switch row.editingStyle {
        case .delete: break
        case .insert: return .insertionControl
        case .none: return .noDeleteControl
        }
        return isReservedLastRow(path) ? .reservedLastRow : nil
    }

    /// Why the row at `path` may not be moved, or nil when it may: the `moves` rule, then the row's `movable`,
    /// then placeholders. Where a movable row may go (`withinSection`, after the reserved last row) is not refused
    /// but retargeted by the engine.
    public func moveRefusal(at path: RowPath) -> RowRefusal? {
        if rules.moves == .none { return .noMoves }
        let row = sections[path.section].rows[path.row]
        if !row.movable { return .notMovable }
        if row.editingStyle == .insert { return .insertionControl }
        return isReservedLastRow(path) ? .reservedLastRow : nil
    }

    /// Why the row at `path` may not be reloaded (its value replaced), or nil when it may. A reload that sets a
    /// flag is how an admin unlocks a row, so it may touch a locked row (`setsFlags`); who may set flags is the
    /// server's access control, not a rule of the table.
    public func reloadRefusal(at path: RowPath, setsFlags: Bool = false) -> RowRefusal? {
        sections[path.section].rows[path.row].editable || setsFlags ? nil : .notEditable
    }
}
