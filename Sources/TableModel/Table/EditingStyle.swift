/// `tableView(_:editingStyleForRowAt:)`: the control a row shows in editing mode, and what the server lets
/// clients do to it.
public enum EditingStyle: String, Hashable, Sendable, CaseIterable {
    /// The delete control (the default): the row may be deleted (swipe-to-delete) if it is editable.
    case delete
    /// The insertion control: an add-item placeholder. It cannot be deleted or moved; rows may be inserted next
    /// to it.
    case insert
    /// No control: the row cannot be deleted (its value may still be edited if it is editable). Where an
    /// optional style is expected, write `EditingStyle.none`: a bare `.none` there is `nil`.
    case none
}
