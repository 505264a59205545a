/// What a client asks for. Rows and sections are named as the client saw them at its base version (given to
/// ``TableEngine/resolve(_:base:)``); every intent is a one-entry ``ClientBatch`` except `batch` itself.
public enum Intent: Hashable, Sendable {
    /// Insert a row at an index path (the Add button, or the insertion control).
    case insert(at: RowPath, row: RowContent)
    /// Delete a row (swipe-to-delete, `commitEditingStyle` with `.delete`).
    case delete(RowRef)
    /// Move a row to a proposed index path (`moveRowAt:to:`); the rules may retarget it.
    case move(from: RowRef, to: RowPath)
    /// Reload a row with a new value and, optionally, new flags.
    case edit(RowRef, value: JSONValue, editable: Bool? = nil, movable: Bool? = nil, editingStyle: EditingStyle? = nil)
    /// Merge-patch a row's value (RFC 7386) as it is when the intent is committed.
    case patch(RowRef, patch: JSONValue)
    /// Insert a section with its rows.
    case insertSection(at: Int, section: SectionContent)
    /// Delete a section and its rows.
    case deleteSection(SectionRef)
    /// Move a section (`moveSection:toSection:`).
    case moveSection(from: SectionRef, to: Int)
    /// Change a section's header and footer (for each, `nil` keeps it and `.some(nil)` clears it) and, when `rows`
    /// is given, replace all of its rows (`reloadSections:`).
    case editSection(SectionRef, header: String?? = nil, footer: String?? = nil, rows: [RowContent]? = nil)
    /// Several changes at once, with `beginUpdates`/`endUpdates` index semantics.
    case batch(ClientBatch)

    /// The intent's wire name, which also names the entry in messages of single-entry intents.
    public var name: String {
        switch self {
        case .insert: "insert"
        case .delete: "delete"
        case .move: "move"
        case .edit: "edit"
        case .patch: "patch"
        case .insertSection: "insertSection"
        case .deleteSection: "deleteSection"
        case .moveSection: "moveSection"
        case .editSection: "editSection"
        case .batch: "batch"
        }
    }

    /// The intent as a client batch.
    public var clientBatch: ClientBatch {
        switch self {
        case .insert(let at, let row): ClientBatch(insertRows: [.init(at: at, row: row)])
        case .delete(let row): ClientBatch(deleteRows: [row])
        case .move(let from, let to): ClientBatch(moveRows: [.init(from: from, to: to)])
        case .edit(let row, let value, let editable, let movable, let editingStyle):
            ClientBatch(
                reloadRows: [
                    .init(row: row, value: value, editable: editable, movable: movable, editingStyle: editingStyle)
                ])
        case .patch(let row, let patch): ClientBatch(patchRows: [.init(row: row, patch: patch)])
        case .insertSection(let at, let section): ClientBatch(insertSections: [.init(at: at, section: section)])
        case .deleteSection(let section): ClientBatch(deleteSections: [section])
        case .moveSection(let from, let to): ClientBatch(moveSections: [.init(from: from, to: to)])
        case .editSection(let section, let header, let footer, let rows):
            ClientBatch(reloadSections: [.init(section: section, header: header, footer: footer, rows: rows)])
        case .batch(let batch): batch
        }
    }

    /// How messages name an entry: `deleteRows[1]` inside a batch, the intent's name for a single change.
    func label(_ list: BatchList, _ index: Int) -> String {
        if case .batch = self { return "\(list.rawValue)[\(index)]" }
        return name
    }
}
