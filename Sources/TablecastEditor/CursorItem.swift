/// The line the cursor is on: a section's header line or a row, named by id so that it stays put when others
/// change the table.
public enum CursorItem: Hashable, Sendable {
    /// The header line of the section with this id.
    case section(String)
    /// The row with this id.
    case row(String)
}
