import TableModel

/// Refusals in the status line's words. The decisions are the table's own (``Table/deleteRefusal(at:)``,
/// ``Table/moveRefusal(at:)``), the ones the server's engine enforces, so the editor refuses at once, without a
/// round trip, exactly what the server would.
extension Editor {
    /// Why the row with this id cannot be deleted, or nil when it can (or it is not in the table).
    func deleteRefusal(_ id: String) -> String? {
        guard let path = path(ofRow: id) else { return nil }
        return table.deleteRefusal(at: path).map { Self.text($0, "deleted") }
    }

    /// Why the row at `path` cannot be moved, or nil when it can.
    func moveRefusal(at path: RowPath) -> String? {
        table.moveRefusal(at: path).map { Self.text($0, "moved") }
    }

    /// A refusal to delete or move a row (`verb`: "deleted" or "moved") as the status line says it.
    private static func text(_ refusal: RowRefusal, _ verb: String) -> String {
        switch refusal {
        case .notEditable: "this row is locked: it cannot be \(verb)"
        case .insertionControl, .reservedLastRow: "this row is an add-item placeholder: it cannot be \(verb)"
        case .noDeleteControl, .notMovable: "this row cannot be \(verb)"
        case .noMoves: "rows cannot be moved in this table"
        }
    }
}
