/// An intent held by ids instead of index paths, so that it can be turned back into an intent against a table
/// that has changed since it was made (``materialize(on:strict:)``).
///
/// Rows and sections are named by id; an insertion point or a move destination is "right after the nearest of
/// these predecessors that is still in section S" (nearest first; when none is left, first in S), where S is a
/// section id. Ids are the ones a client shows: real ids, or provisional ids (`~1`, `~2`, ...) for what pending
/// intents create, which ``OptimisticTable`` replaces with the real ones when the server acknowledges them.
///
/// Made from a resolved batch and the table before and after it: ``forward(_:before:after:)`` redoes the batch,
/// ``inverse(_:before:after:provisional:)`` undoes it.
struct AnchoredIntent: Hashable, Sendable {
    /// Where a row goes: right after the nearest of `predecessors` still in section `section`, else first in it.
    /// `order` sorts the placements of one intent so that a placement after another one it names comes later.
    struct RowPlacement: Hashable, Sendable {
        var section: String
        var predecessors: [String]
        var order: RowPath
    }

    /// Where a section goes: right after the nearest of `predecessors` still there, else first.
    struct SectionPlacement: Hashable, Sendable {
        var predecessors: [String]
        var order: Int
    }

    struct SectionInsert: Hashable, Sendable {
        var id: String
        var content: SectionContent
        var rowIDs: [String]
        var placement: SectionPlacement
    }

    struct SectionReload: Hashable, Sendable {
        var id: String
        var header: String?
        var footer: String?
    }

    struct SectionMove: Hashable, Sendable {
        var id: String
        var placement: SectionPlacement
    }

    struct RowInsert: Hashable, Sendable {
        var id: String
        var content: RowContent
        var placement: RowPlacement
    }

    struct RowReload: Hashable, Sendable {
        var id: String
        var value: JSONValue
        var editable: Bool?
        var movable: Bool?
        var editingStyle: EditingStyle?
    }

    struct RowMove: Hashable, Sendable {
        var id: String
        var placement: RowPlacement
    }

    struct RowPatch: Hashable, Sendable {
        var id: String
        var patch: JSONValue
    }

    var deleteSections: [String] = []
    var insertSections: [SectionInsert] = []
    var reloadSections: [SectionReload] = []
    var moveSections: [SectionMove] = []
    var deleteRows: [String] = []
    var insertRows: [RowInsert] = []
    var reloadRows: [RowReload] = []
    var moveRows: [RowMove] = []
    var patchRows: [RowPatch] = []

    /// The ids this intent creates, in the order the engine assigns them to its materialized form: each inserted
    /// section's id followed by its rows' ids, then each inserted row's id.
    var created: [String] {
        insertSections.flatMap { [$0.id] + $0.rowIDs } + insertRows.map(\.id)
    }

    /// Whether `id` is provisional: assigned by a client to what a pending intent creates, never by a table.
    static func isProvisional(_ id: String) -> Bool { id.hasPrefix("~") }
}

// MARK: - Making

extension AnchoredIntent {
    /// The anchored form of `batch`, which turned `before` into `after` (all ids as the client shows them);
    /// `patches` are the merge patches behind its reloads (``Resolution/patches``), which stay patches.
    static func forward(_ batch: Batch, patches: [RowPath: JSONValue], before: Table, after: Table) -> AnchoredIntent {
        var anchored = AnchoredIntent()
        anchored.deleteSections = batch.deleteSections.map { before.sections[$0].id }
        anchored.insertSections = batch.insertSections.map { insert in
            let section = after.sections[insert.at]
            return SectionInsert(
                id: section.id, content: section.content, rowIDs: section.rows.map(\.id),
                placement: after.sectionPlacement(at: insert.at))
        }
        anchored.reloadSections = batch.reloadSections.map {
            SectionReload(id: before.sections[$0.at].id, header: $0.header, footer: $0.footer)
        }
        anchored.moveSections = batch.moveSections.map {
            SectionMove(id: before.sections[$0.from].id, placement: after.sectionPlacement(at: $0.to))
        }
        anchored.deleteRows = batch.deleteRows.map { before.sections[$0.section].rows[$0.row].id }
        anchored.insertRows = batch.insertRows.map { insert in
            let row = after.sections[insert.at.section].rows[insert.at.row]
            return RowInsert(id: row.id, content: row.content, placement: after.rowPlacement(at: insert.at))
        }
        for reload in batch.reloadRows {
            let id = before.sections[reload.at.section].rows[reload.at.row].id
            if let patch = patches[reload.at] {
                anchored.patchRows.append(RowPatch(id: id, patch: patch))
            } else {
                anchored.reloadRows.append(
                    RowReload(
                        id: id, value: reload.value, editable: reload.editable, movable: reload.movable,
                        editingStyle: reload.editingStyle))
            }
        }
        anchored.moveRows = batch.moveRows.map {
            RowMove(id: before.sections[$0.from.section].rows[$0.from.row].id, placement: after.rowPlacement(at: $0.to))
        }
        return anchored
    }

    /// The anchored form of what undoes `batch`, which turned `before` into `after`: deleted rows and sections
    /// come back with their values and flags where they were (right after what preceded them), with new ids
    /// taken from `provisional`; inserted ones are deleted; moved ones move back; reloaded ones get their old
    /// value (and the flags the batch changed), and patched ones a patch restoring only what their patch
    /// (`patches`, by index path before the batch) changed, so that what others changed meanwhile stays. Only flags
    /// the batch set are restored, so that undoing a plain edit never needs the right to set flags.
    static func inverse(
        _ batch: Batch, patches: [RowPath: JSONValue], before: Table, after: Table, provisional: () -> String
    ) -> AnchoredIntent {
        var anchored = AnchoredIntent()
        // Ids of what comes back, old → new, so that placements can name each other.
        var renamed: [String: String] = [:]
        let deletedSections = Set(batch.deleteSections)
        for index in batch.deleteSections.sorted() {
            let section = before.sections[index]
            renamed[section.id] = provisional()
            for row in section.rows { renamed[row.id] = provisional() }
        }
        let deletedRows = batch.deleteRows.filter { !deletedSections.contains($0.section) }.sorted()
        for path in deletedRows { renamed[before.sections[path.section].rows[path.row].id] = provisional() }
        func name(_ id: String) -> String { renamed[id] ?? id }
        func sectionPlacement(_ index: Int) -> SectionPlacement {
            let placement = before.sectionPlacement(at: index)
            return SectionPlacement(predecessors: placement.predecessors.map(name), order: index)
        }
        func rowPlacement(_ path: RowPath) -> RowPlacement {
            let placement = before.rowPlacement(at: path)
            return RowPlacement(
                section: name(placement.section), predecessors: placement.predecessors.map(name), order: path)
        }

        anchored.deleteSections = batch.insertSections.map(\.section.id)
        anchored.insertSections = batch.deleteSections.sorted().map { index in
            let section = before.sections[index]
            return SectionInsert(
                id: name(section.id), content: section.content, rowIDs: section.rows.map { name($0.id) },
                placement: sectionPlacement(index))
        }
        anchored.reloadSections = batch.reloadSections.map {
            let section = before.sections[$0.at]
            return SectionReload(id: section.id, header: section.header, footer: section.footer)
        }
        anchored.moveSections = batch.moveSections.map {
            SectionMove(id: before.sections[$0.from].id, placement: sectionPlacement($0.from))
        }
        let insertedSections = Set(batch.insertSections.map(\.at))
        anchored.deleteRows = batch.insertRows.filter { !insertedSections.contains($0.at.section) }.map(\.row.id)
        anchored.insertRows = deletedRows.map { path in
            let row = before.sections[path.section].rows[path.row]
            return RowInsert(id: name(row.id), content: row.content, placement: rowPlacement(path))
        }
        for reload in batch.reloadRows {
            let row = before.sections[reload.at.section].rows[reload.at.row]
            if let patch = patches[reload.at], let undoing = row.value.mergePatch(undoing: patch) {
                anchored.patchRows.append(RowPatch(id: row.id, patch: undoing))
                continue
            }
            anchored.reloadRows.append(
                RowReload(
                    id: row.id, value: row.value, editable: reload.editable.map { _ in row.editable },
                    movable: reload.movable.map { _ in row.movable },
                    editingStyle: reload.editingStyle.map { _ in row.editingStyle }))
        }
        anchored.moveRows = batch.moveRows.map {
            RowMove(id: before.sections[$0.from.section].rows[$0.from.row].id, placement: rowPlacement($0.from))
        }
        return anchored
    }

    /// The same intent with ids replaced through `aliases` (provisional → real, once the server assigned them).
    func renaming(_ aliases: [String: String]) -> AnchoredIntent {
        guard !aliases.isEmpty else { return self }
        func name(_ id: String) -> String { aliases[id] ?? id }
        func row(_ placement: RowPlacement) -> RowPlacement {
            RowPlacement(
                section: name(placement.section), predecessors: placement.predecessors.map(name), order: placement.order
            )
        }
        func section(_ placement: SectionPlacement) -> SectionPlacement {
            SectionPlacement(predecessors: placement.predecessors.map(name), order: placement.order)
        }
        var copy = self
        copy.deleteSections = deleteSections.map(name)
        copy.insertSections = insertSections.map {
            SectionInsert(
                id: name($0.id), content: $0.content, rowIDs: $0.rowIDs.map(name), placement: section($0.placement))
        }
        copy.reloadSections = reloadSections.map {
            SectionReload(id: name($0.id), header: $0.header, footer: $0.footer)
        }
        copy.moveSections = moveSections.map { SectionMove(id: name($0.id), placement: section($0.placement)) }
        copy.deleteRows = deleteRows.map(name)
        copy.insertRows = insertRows.map {
            RowInsert(id: name($0.id), content: $0.content, placement: row($0.placement))
        }
        copy.reloadRows = reloadRows.map {
            RowReload(
                id: name($0.id), value: $0.value, editable: $0.editable, movable: $0.movable,
                editingStyle: $0.editingStyle)
        }
        copy.moveRows = moveRows.map { RowMove(id: name($0.id), placement: row($0.placement)) }
        copy.patchRows = patchRows.map { RowPatch(id: name($0.id), patch: $0.patch) }
        return copy
    }
}

// MARK: - Materializing

extension AnchoredIntent {
    /// The intent that does this to `table` (whose ids are as the client shows them), made at `table`'s version:
    /// a one-entry intent when it has one entry, else a batch; `nil` when nothing is left to do.
    ///
    /// - A row or section to delete that is gone is dropped (deleting it again would change nothing), unless
    ///   `strict` (undo), which refuses it: the step it undoes no longer applies.
    /// - A row or section to reload or move that is gone refuses the whole intent with `conflict`, as the server
    ///   refuses a stale intent whose target was deleted since; so does a placement whose section is gone.
    /// - A placement goes right after the nearest of its predecessors still in its section (ids, nearest first),
    ///   or first in the section when none is; placements of the intent into one gap keep their order.
    ///
    /// Refs carry real ids (the engine checks them) and no provisional ones (the engine does not know them).
    func materialize(on table: Table, strict: Bool) throws(TableError) -> Intent? {
        let label = entryCount == 1 ? singleName : nil
        func at(_ list: BatchList, _ index: Int) -> String { label ?? "\(list.rawValue)[\(index)]" }
        var sectionIndex: [String: Int] = [:]
        var rowPath: [String: RowPath] = [:]
        for (s, section) in table.sections.enumerated() {
            sectionIndex[section.id] = s
            for (r, row) in section.rows.enumerated() { rowPath[row.id] = RowPath(section: s, row: r) }
        }
        func checked(_ id: String) -> String? { Self.isProvisional(id) ? nil : id }
        func section(_ id: String, _ list: BatchList, _ index: Int) throws(TableError) -> Int {
            guard let found = sectionIndex[id] else {
                throw .conflict(at(list, index), "section \(id) has been deleted")
            }
            return found
        }
        func row(_ id: String, _ list: BatchList, _ index: Int) throws(TableError) -> RowPath {
            guard let found = rowPath[id] else {
                let fact =
                    Self.isProvisional(id)
                    ? "was not created (the intent inserting it was refused)" : "has been deleted"
                throw .conflict(at(list, index), "row \(id) \(fact)")
            }
            return found
        }

        var client = ClientBatch()
        var removedSections: Set<String> = []
        for (index, id) in deleteSections.enumerated() {
            guard let found = sectionIndex[id] else {
                if strict { throw .conflict(at(.deleteSections, index), "section \(id) has been deleted") }
                continue
            }
            client.deleteSections.append(SectionRef(found, id: checked(id)))
            removedSections.insert(id)
        }
        for (index, reload) in reloadSections.enumerated() {
            let found = try section(reload.id, .reloadSections, index)
            client.reloadSections.append(
                .init(
                    section: SectionRef(found, id: checked(reload.id)), header: .some(reload.header),
                    footer: .some(reload.footer)))
        }
        var movedSectionFrom: [SectionRef] = []
        for (index, move) in moveSections.enumerated() {
            let found = try section(move.id, .moveSections, index)
            movedSectionFrom.append(SectionRef(found, id: checked(move.id)))
            removedSections.insert(move.id)
        }
        var removedRows: Set<String> = []
        for (index, id) in deleteRows.enumerated() {
            guard let found = rowPath[id], !removedSections.contains(table.sections[found.section].id) else {
                if strict { throw .conflict(at(.deleteRows, index), "row \(id) has been deleted") }
                continue
            }
            client.deleteRows.append(RowRef(found, id: checked(id)))
            removedRows.insert(id)
        }
        for (index, reload) in reloadRows.enumerated() {
            let found = try row(reload.id, .reloadRows, index)
            client.reloadRows.append(
                .init(
                    row: RowRef(found, id: checked(reload.id)), value: reload.value, editable: reload.editable,
                    movable: reload.movable, editingStyle: reload.editingStyle))
        }
        for (index, patch) in patchRows.enumerated() {
            let found = try row(patch.id, .patchRows, index)
            client.patchRows.append(.init(row: RowRef(found, id: checked(patch.id)), patch: patch.patch))
        }
        var movedRowFrom: [RowRef] = []
        for (index, move) in moveRows.enumerated() {
            let found = try row(move.id, .moveRows, index)
            movedRowFrom.append(RowRef(found, id: checked(move.id)))
            removedRows.insert(move.id)
        }

        // The sections after the intent, then each placement's final index.
        var sections = table.sections.map(\.id).filter { !removedSections.contains($0) }
        let sectionPlacements =
            (insertSections.map { ($0.id, $0.placement) } + moveSections.map { ($0.id, $0.placement) })
            .sorted { $0.1.order < $1.1.order }
        for (id, placement) in sectionPlacements {
            sections.insert(id, at: Self.position(after: placement.predecessors, in: sections))
        }
        let finalSection = Dictionary(uniqueKeysWithValues: sections.enumerated().map { ($1, $0) })

        // The rows of every section something is placed into, after the intent.
        let rowPlacements = (insertRows.map { ($0.id, $0.placement) } + moveRows.map { ($0.id, $0.placement) })
        var finalRow: [String: RowPath] = [:]
        for (target, placements) in Dictionary(grouping: rowPlacements, by: \.1.section) {
            guard let final = finalSection[target] else {
                let first = placements[0].0
                let entry =
                    insertRows.firstIndex { $0.id == first }.map { at(.insertRows, $0) }
                    ?? at(.moveRows, moveRows.firstIndex { $0.id == first }!)
                throw .conflict(entry, "section \(target) has been deleted")
            }
            var rows: [String]
            if let inserted = insertSections.first(where: { $0.id == target }) {
                rows = inserted.rowIDs
            } else {
                rows = table.sections[sectionIndex[target]!].rows.map(\.id).filter { !removedRows.contains($0) }
            }
            for (id, placement) in placements.sorted(by: { $0.1.order < $1.1.order }) {
                rows.insert(id, at: Self.position(after: placement.predecessors, in: rows))
            }
            for (index, id) in rows.enumerated() { finalRow[id] = RowPath(section: final, row: index) }
        }

        client.insertSections = insertSections.map { .init(at: finalSection[$0.id]!, section: $0.content) }
        client.moveSections = zip(movedSectionFrom, moveSections).map { .init(from: $0, to: finalSection[$1.id]!) }
        client.insertRows = insertRows.map { .init(at: finalRow[$0.id]!, row: $0.content) }
        client.moveRows = zip(movedRowFrom, moveRows).map { .init(from: $0, to: finalRow[$1.id]!) }
        return Self.intent(client)
    }

    /// Right after the first of `predecessors` found in `list`, or 0.
    private static func position(after predecessors: [String], in list: [String]) -> Int {
        for id in predecessors {
            if let index = list.firstIndex(of: id) { return index + 1 }
        }
        return 0
    }

    private var entryCount: Int {
        deleteSections.count + insertSections.count + reloadSections.count + moveSections.count + deleteRows.count
            + insertRows.count + reloadRows.count + moveRows.count + patchRows.count
    }

    /// The name of the one-entry intent this is, when it has one entry.
    private var singleName: String {
        if !deleteSections.isEmpty { return "deleteSection" }
        if !insertSections.isEmpty { return "insertSection" }
        if !reloadSections.isEmpty { return "editSection" }
        if !moveSections.isEmpty { return "moveSection" }
        if !deleteRows.isEmpty { return "delete" }
        if !insertRows.isEmpty { return "insert" }
        if !reloadRows.isEmpty { return "edit" }
        if !patchRows.isEmpty { return "patch" }
        return "move"
    }

    /// A one-entry client batch as its one-entry intent, any other non-empty one as a batch.
    static func intent(_ client: ClientBatch) -> Intent? {
        let count =
            client.deleteSections.count + client.insertSections.count + client.reloadSections.count
            + client.moveSections.count + client.deleteRows.count + client.insertRows.count + client.reloadRows.count
            + client.moveRows.count + client.patchRows.count
        guard count > 0 else { return nil }
        guard count == 1 else { return .batch(client) }
        if let ref = client.deleteSections.first { return .deleteSection(ref) }
        if let insert = client.insertSections.first { return .insertSection(at: insert.at, section: insert.section) }
        if let reload = client.reloadSections.first {
            return .editSection(reload.section, header: reload.header, footer: reload.footer, rows: reload.rows)
        }
        if let move = client.moveSections.first { return .moveSection(from: move.from, to: move.to) }
        if let ref = client.deleteRows.first { return .delete(ref) }
        if let insert = client.insertRows.first { return .insert(at: insert.at, row: insert.row) }
        if let reload = client.reloadRows.first {
            return .edit(
                reload.row, value: reload.value, editable: reload.editable, movable: reload.movable,
                editingStyle: reload.editingStyle)
        }
        if let patch = client.patchRows.first { return .patch(patch.row, patch: patch.patch) }
        let move = client.moveRows[0]
        return .move(from: move.from, to: move.to)
    }
}

extension Table {
    /// Where section `index` sits: after the sections before it, nearest first.
    func sectionPlacement(at index: Int) -> AnchoredIntent.SectionPlacement {
        AnchoredIntent.SectionPlacement(predecessors: sections[..<index].reversed().map(\.id), order: index)
    }

    /// Where row `path` sits: in its section, after the rows before it, nearest first.
    func rowPlacement(at path: RowPath) -> AnchoredIntent.RowPlacement {
        let section = sections[path.section]
        return AnchoredIntent.RowPlacement(
            section: section.id, predecessors: section.rows[..<path.row].reversed().map(\.id), order: path)
    }
}

extension Section {
    /// The section without ids.
    var content: SectionContent { SectionContent(header: header, footer: footer, rows: rows.map(\.content)) }
}

extension Row {
    /// The row without its id.
    var content: RowContent {
        RowContent(value: value, editable: editable, movable: movable, editingStyle: editingStyle)
    }
}
