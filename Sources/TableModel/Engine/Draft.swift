/// An intent translated to the current table's coordinates, before the rules, ids and canonical order are
/// applied. `origin` is the entry's index in the client's list, for messages and for reporting positions.
struct Draft {
    var deleteSections: [(index: Int, origin: Int)] = []
    var insertSections: [(at: Int, content: SectionContent, origin: Int)] = []
    var reloadSections: [(at: Int, header: String??, footer: String??, rows: [RowContent]?, origin: Int)] = []
    var moveSections: [(from: Int, to: Int, origin: Int)] = []
    var deleteRows: [(path: RowPath, origin: Int)] = []
    var insertRows: [(at: RowPath, content: RowContent, origin: Int)] = []
    var reloadRows:
        [(at: RowPath, value: JSONValue, editable: Bool?, movable: Bool?, editingStyle: EditingStyle?, origin: Int)] =
            []
    var moveRows: [(from: RowPath, to: RowPath, origin: Int)] = []
    /// Merge patches, which ``TableEngine/mergePatches(_:)`` turns into reloads of the merged value.
    var patchRows: [(at: RowPath, patch: JSONValue, origin: Int)] = []
    /// Where the reloads that patches became begin in `reloadRows`: they follow the client's own entries.
    var patchReloads = Int.max
    /// Where the rows that section reloads replace begin in `deleteRows` and `insertRows`: they follow the client's
    /// own entries, and their origin is the reloadSections entry's.
    var sectionReloadDeletes = Int.max
    var sectionReloadInserts = Int.max

    /// The client's entry behind entry `index` of `list`.
    func entry(_ list: BatchList, _ index: Int) -> (list: BatchList, origin: Int) {
        switch list {
        case .deleteSections: (list, deleteSections[index].origin)
        case .insertSections: (list, insertSections[index].origin)
        case .reloadSections: (list, reloadSections[index].origin)
        case .moveSections: (list, moveSections[index].origin)
        case .deleteRows: (index < sectionReloadDeletes ? list : .reloadSections, deleteRows[index].origin)
        case .insertRows: (index < sectionReloadInserts ? list : .reloadSections, insertRows[index].origin)
        case .reloadRows: (index < patchReloads ? list : .patchRows, reloadRows[index].origin)
        case .moveRows: (list, moveRows[index].origin)
        case .patchRows: (list, patchRows[index].origin)
        }
    }

    /// How messages name entry `index` of `list`.
    func label(_ list: BatchList, _ index: Int, in intent: Intent) -> String {
        let entry = entry(list, index)
        return intent.label(entry.list, entry.origin)
    }

    /// The draft taken as given: the intent was made at the current version.
    init(_ client: ClientBatch) {
        deleteSections = client.deleteSections.enumerated().map { ($1.index, $0) }
        insertSections = client.insertSections.enumerated().map { ($1.at, $1.section, $0) }
        reloadSections = client.reloadSections.enumerated().map {
            ($1.section.index, $1.header, $1.footer, $1.rows, $0)
        }
        moveSections = client.moveSections.enumerated().map { ($1.from.index, $1.to, $0) }
        deleteRows = client.deleteRows.enumerated().map { ($1.path, $0) }
        insertRows = client.insertRows.enumerated().map { ($1.at, $1.row, $0) }
        reloadRows = client.reloadRows.enumerated().map {
            ($1.row.path, $1.value, $1.editable, $1.movable, $1.editingStyle, $0)
        }
        moveRows = client.moveRows.enumerated().map { ($1.from.path, $1.to, $0) }
        patchRows = client.patchRows.enumerated().map { ($1.row.path, $1.patch, $0) }
    }

    init() {}

    /// The draft as a batch for validation: inserted ids are left empty and section reloads are completed with
    /// the current header or footer where the client left them unchanged.
    func batch(on table: Table) -> Batch {
        Batch(
            deleteSections: deleteSections.map(\.index),
            insertSections: insertSections.map { insert in
                .init(
                    at: insert.at,
                    section: Section(
                        id: "", header: insert.content.header, footer: insert.content.footer,
                        rows: insert.content.rows.map {
                            Row(
                                id: "", value: $0.value, editable: $0.editable, movable: $0.movable,
                                editingStyle: $0.editingStyle)
                        }))
            },
            reloadSections: reloadSections.map { reload in
                let current = table.sections.indices.contains(reload.at) ? table.sections[reload.at] : nil
                return .init(
                    at: reload.at, header: reload.header ?? current?.header, footer: reload.footer ?? current?.footer)
            },
            moveSections: moveSections.map { .init(from: $0.from, to: $0.to) },
            deleteRows: deleteRows.map(\.path),
            insertRows: insertRows.map {
                .init(
                    at: $0.at,
                    row: Row(
                        id: "", value: $0.content.value, editable: $0.content.editable, movable: $0.content.movable,
                        editingStyle: $0.content.editingStyle))
            },
            reloadRows: reloadRows.map {
                .init(
                    at: $0.at, value: $0.value, editable: $0.editable, movable: $0.movable,
                    editingStyle: $0.editingStyle)
            },
            moveRows: moveRows.map { .init(from: $0.from, to: $0.to) })
    }
}
