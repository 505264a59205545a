/// One row of a table: a stable id, a JSON value and the per-row delegate decisions.
public struct Row: Hashable, Sendable {
    /// The id the table assigned; unique within the table and never reused.
    public var id: String
    /// The client data the row shows.
    public var value: JSONValue
    /// `tableView(_:canEditRowAt:)`: whether the row may be deleted or reloaded.
    public var editable: Bool
    /// `tableView(_:canMoveRowAt:)`: whether the row may be moved.
    public var movable: Bool
    /// `tableView(_:editingStyleForRowAt:)`: the delete control, the insertion control or none.
    public var editingStyle: EditingStyle

    /// Creates a row; ids come from the table's generator, so outside the model this is for decoding and tests.
    public init(
        id: String, value: JSONValue, editable: Bool = true, movable: Bool = true, editingStyle: EditingStyle = .delete
    ) {
        self.id = id
        self.value = value
        self.editable = editable
        self.movable = movable
        self.editingStyle = editingStyle
    }
}

/// A row as a client proposes it: everything but the id, which the table assigns on commit.
public struct RowContent: Hashable, Sendable {
    /// The client data the row shows.
    public var value: JSONValue
    /// Whether the row may be deleted or reloaded.
    public var editable: Bool
    /// Whether the row may be moved.
    public var movable: Bool
    /// The row's editing style.
    public var editingStyle: EditingStyle

    /// Creates row content; the flags default to the table-view defaults (`true`, `.delete`).
    public init(value: JSONValue, editable: Bool = true, movable: Bool = true, editingStyle: EditingStyle = .delete) {
        self.value = value
        self.editable = editable
        self.movable = movable
        self.editingStyle = editingStyle
    }
}
