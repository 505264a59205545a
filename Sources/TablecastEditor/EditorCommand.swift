import TableModel

/// What the editor asks the outside world to do after a key or an event (the terminal edge carries it out).
public enum EditorCommand: Hashable, Sendable {
    /// Send an intent whose index paths refer to version `base` (the table as shown).
    case send(Intent, base: UInt64, label: String, requested: RowPath?)
    /// Presence: this person is now on the row with this id (editing it, or confirming its delete).
    case beginEditingRow(String)
    /// Presence: this person left the row with this id.
    case endEditingRow(String)
    /// Presence: this person entered or left editing mode.
    case setEditing(Bool)
    /// Pull-to-refresh: resync and report `refreshed`.
    case refresh
    /// Undo / redo this person's last change (the client computes the inverse and sends it like any intent).
    case undo
    /// Redo the last undone change.
    case redo
    /// Leave the editor.
    case quit
}
