extension TableEngine {
    /// Turns a draft in current coordinates into a resolution: validates it, enforces the rules, retargets moves
    /// and insertions, checks the limits where everything landed, drops what changes nothing, assigns ids and
    /// puts the batch in canonical order. `draft` is consumed: a copy of it would retain each of its lists.
    func finish(_ draft: consuming Draft, intent: Intent) throws(TableError) -> Resolution {
        mergePatches(&draft)
        try replaceReloadedRows(&draft, intent: intent)
        // A local function, passed only where it cannot escape, borrows `draft` and `intent`; a closure value kept
        // the draft in a box and copied the intent at every call it was passed to.
        func label(_ list: BatchList, _ index: Int) -> String { draft.label(list, index, in: intent) }
        var layout = try table.layout(of: draft.batch(on: table), checkIDs: false, label: label)
        try checkRules(draft, label: label)
        if table.rules.moves == .withinSection, retargetIntoSourceSection(&draft, layout: layout) {
            layout = try table.layout(of: draft.batch(on: table), checkIDs: false, label: label)
        }
        if table.rules.reserveLastRow, keepPlaceholdersLast(&draft, layout: layout) {
            layout = try table.layout(of: draft.batch(on: table), checkIDs: false, label: label)
        }
        try checkLimits(draft, layout: layout, label: label)
        var patches: [RowPath: JSONValue] = [:]
        for index in draft.reloadRows.indices.dropFirst(min(draft.patchReloads, draft.reloadRows.count)) {
            patches[draft.reloadRows[index].at] = draft.patchRows[draft.reloadRows[index].origin].patch
        }
        draft.reloadRows.removeAll { reload in
            let row = table.sections[reload.at.section].rows[reload.at.row]
            return row.value == reload.value && (reload.editable ?? row.editable) == row.editable
                && (reload.movable ?? row.movable) == row.movable
                && (reload.editingStyle ?? row.editingStyle) == row.editingStyle
        }
        draft.reloadSections.removeAll { reload in
            let section = table.sections[reload.at]
            return (reload.header ?? section.header) == section.header
                && (reload.footer ?? section.footer) == section.footer
        }
        let changesNothing =
            draft.deleteSections.isEmpty && draft.insertSections.isEmpty && draft.reloadSections.isEmpty
            && draft.deleteRows.isEmpty && draft.insertRows.isEmpty && draft.reloadRows.isEmpty
            && draft.moveSections.allSatisfy { $0.from == $0.to } && draft.moveRows.allSatisfy { $0.from == $0.to }
        var batch = changesNothing ? Batch() : draft.batch(on: table)

        // Ids in the order of the intent's entries; inserts are never dropped, so draft order is entry order.
        var nextID = table.nextID
        var createdIDs: [String] = []
        func assign(_ kind: Table.IDKind) -> String {
            defer { nextID += 1 }
            createdIDs.append(Table.id(kind, nextID))
            return createdIDs[createdIDs.count - 1]
        }
        for index in batch.insertSections.indices {
            batch.insertSections[index].section.id = assign(.section)
            for row in batch.insertSections[index].section.rows.indices {
                batch.insertSections[index].section.rows[row].id = assign(.row)
            }
        }
        for index in batch.insertRows.indices { batch.insertRows[index].row.id = assign(.row) }

        return Resolution(
            batch: batch.canonical, tableVersion: table.version, version: table.version + (changesNothing ? 0 : 1),
            createdIDs: createdIDs, insertedSections: draft.insertSections.map(\.at),
            insertedRows: draft.insertRows.prefix(draft.sectionReloadInserts).map(\.at),
            movedSections: draft.moveSections.map(\.to), movedRows: draft.moveRows.map(\.to),
            patches: patches.filter { path, _ in batch.reloadRows.contains { $0.at == path } })
    }

    /// Resolves merge patches against the rows as they are now: each becomes a reload of the merged value,
    /// appended after the client's own reloads, so that it is validated, ruled and limited as an edit is (a
    /// row that does not exist gets some value, and the validation names the entry).
    func mergePatches(_ draft: inout Draft) {
        guard !draft.patchRows.isEmpty else { return }
        draft.patchReloads = draft.reloadRows.count
        for patch in draft.patchRows {
            let current = table.row(at: patch.at)?.value ?? .null
            draft.reloadRows.append((patch.at, current.merging(patch: patch.patch), nil, nil, nil, patch.origin))
        }
    }

    /// The delegate decisions (``Table/deleteRefusal(at:)``, ``Table/reloadRefusal(at:setsFlags:)``,
    /// ``Table/moveRefusal(at:)``) as the errors clients get. Deleting a whole section is not a row deletion: it
    /// takes its rows whatever their flags.
    private func checkRules(_ draft: Draft, label: (BatchList, Int) -> String) throws(TableError) {
        for (index, delete) in draft.deleteRows.enumerated() {
            if let refusal = table.deleteRefusal(at: delete.path) {
                throw .notEditable(label(.deleteRows, index), Self.fact(refusal, delete.path))
            }
        }
        for (index, reload) in draft.reloadRows.enumerated() {
            let setsFlags = reload.editable != nil || reload.movable != nil || reload.editingStyle != nil
            if let refusal = table.reloadRefusal(at: reload.at, setsFlags: setsFlags) {
                throw .notEditable(label(.reloadRows, index), Self.fact(refusal, reload.at))
            }
        }
        for (index, move) in draft.moveRows.enumerated() {
            if let refusal = table.moveRefusal(at: move.from) {
                throw .notMovable(label(.moveRows, index), Self.fact(refusal, move.from))
            }
        }
    }

    /// A refusal of the row at `path` in the words of the wire's error messages.
    private static func fact(_ refusal: RowRefusal, _ path: RowPath) -> String {
        switch refusal {
        case .notEditable: "row \(path) is not editable"
        case .notMovable: "row \(path) is not movable"
        case .noMoves: "rows cannot be moved in this table (moves: none)"
        case .insertionControl: "row \(path) is an add-item placeholder (editingStyle insert)"
        case .noDeleteControl: "row \(path) cannot be deleted (editingStyle none)"
        case .reservedLastRow: "row \(path) is the reserved last row of section \(path.section)"
        }
    }

    /// Listing 8-3 for `moves: withinSection`: a destination in an earlier section becomes row 0 of the source
    /// section, one in a later section becomes its last row. The delegate is asked about each proposed move in
    /// turn, so several moves of one batch must not collide: each retargeted move first leaves the section it was
    /// proposed into (the batch's rows placed after it there close up), then the retargeted moves take, in entry
    /// order, the first (toward an earlier section) or the last (toward a later one) rows of their source section
    /// that the batch's other insertions and destinations leave free. Returns whether anything changed.
    private func retargetIntoSourceSection(_ draft: inout Draft, layout: BatchLayout) -> Bool {
        var retargeted: [(index: Int, toEarlier: Bool)] = []
        for (index, move) in draft.moveRows.enumerated() {
            let source = layout.finalSection(ofOld: move.from.section)!
            if move.to.section != source { retargeted.append((index, move.to.section < source)) }
        }
        guard !retargeted.isEmpty else { return false }
        for (index, _) in retargeted {
            let left = draft.moveRows[index].to
            // Row -1 until it is placed below, so that nothing closes up over it or counts it as taken.
            draft.moveRows[index].to = RowPath(
                section: layout.finalSection(ofOld: draft.moveRows[index].from.section)!, row: -1)
            for other in draft.insertRows.indices where draft.insertRows[other].at.section == left.section {
                if draft.insertRows[other].at.row > left.row { draft.insertRows[other].at.row -= 1 }
            }
            for other in draft.moveRows.indices where draft.moveRows[other].to.section == left.section {
                if draft.moveRows[other].to.row > left.row { draft.moveRows[other].to.row -= 1 }
            }
        }
        let counts = finalRowCounts(draft, layout: layout)
        var taken: [Int: Set<Int>] = [:]
        for insert in draft.insertRows { taken[insert.at.section, default: []].insert(insert.at.row) }
        for move in draft.moveRows where move.to.row >= 0 { taken[move.to.section, default: []].insert(move.to.row) }
        func place(_ index: Int, from start: Int, step: Int) {
            let section = draft.moveRows[index].to.section
            var row = start
            while taken[section, default: []].contains(row) { row += step }
            taken[section, default: []].insert(row)
            draft.moveRows[index].to.row = row
        }
        for (index, toEarlier) in retargeted where toEarlier { place(index, from: 0, step: 1) }
        for (index, toEarlier) in retargeted.reversed() where !toEarlier {
            place(index, from: counts[draft.moveRows[index].to.section, default: 0] - 1, step: -1)
        }
        return true
    }

    /// `reserveLastRow`: a section's last row is an add-item placeholder that stays last, so rows placed after
    /// it move to just before it (keeping their order). Returns whether anything changed.
    private func keepPlaceholdersLast(_ draft: inout Draft, layout: BatchLayout) -> Bool {
        var placedRows: [Int: [Int]] = [:]
        for insert in draft.insertRows { placedRows[insert.at.section, default: []].append(insert.at.row) }
        for move in draft.moveRows { placedRows[move.to.section, default: []].append(move.to.row) }
        var placeholderRow: [Int: Int] = [:]
        for (section, rows) in placedRows {
            guard let old = layout.oldSection(ofFinal: section), !table.sections[old].rows.isEmpty else { continue }
            let survivors = table.sections[old].rows.count - layout.removedRowCount(inOld: old)
            placeholderRow[section] = Reindexing(removed: [], placed: rows.sorted()).finalIndex(
                ofSurvivor: survivors - 1)
        }
        var changed = false
        for index in draft.insertRows.indices {
            let at = draft.insertRows[index].at
            if let placeholder = placeholderRow[at.section], at.row > placeholder {
                draft.insertRows[index].at.row -= 1
                changed = true
            }
        }
        for index in draft.moveRows.indices {
            let to = draft.moveRows[index].to
            if let placeholder = placeholderRow[to.section], to.row > placeholder {
                draft.moveRows[index].to.row -= 1
                changed = true
            }
        }
        return changed
    }

    /// The row count after the draft of every final section that rows are placed into.
    func finalRowCounts(_ draft: Draft, layout: BatchLayout) -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for insert in draft.insertRows { counts[insert.at.section, default: 0] += 1 }
        for move in draft.moveRows { counts[move.to.section, default: 0] += 1 }
        for section in counts.keys {
            if let old = layout.oldSection(ofFinal: section) {
                counts[section]! += table.sections[old].rows.count - layout.removedRowCount(inOld: old)
            } else if let insert = layout.sectionInserts[section] {
                counts[section]! += draft.insertSections[insert].content.rows.count
            }
        }
        return counts
    }
}
